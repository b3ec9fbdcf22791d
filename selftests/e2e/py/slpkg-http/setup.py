from setuptools import setup
setup(name="slpkg-http", version="1.0", packages=["slpkg_http"], install_requires=["slpkg-core>=1.0"])
