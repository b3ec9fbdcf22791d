def hello(): return "core"
