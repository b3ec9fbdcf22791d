from slpkg_core import hello
