from slpkg_http import hello
