from setuptools import setup
setup(name="slpkg-cli", version="1.0", packages=["slpkg_cli"], install_requires=["slpkg-http>=1.0"])
