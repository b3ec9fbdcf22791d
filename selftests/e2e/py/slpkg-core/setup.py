from setuptools import setup
setup(name="slpkg-core", version="1.0", packages=["slpkg_core"])
