"""Package list for setuptools (all other metadata is in pyproject.toml).

Folder -> import name:  pypc_core/ -> pypc_core,  plugins/ -> pypc_plugins,
rpc_methods/ -> pypc_rpc_methods,  schemas/ -> pypc_schemas (the RPC schemas as
package data)  (the mapping is [tool.setuptools.package-dir]).
Every folder below them that has an __init__.py is a package.
"""

from setuptools import find_packages, setup

PACKAGE_DIRS = {"pypc_core": "pypc_core", "pypc_plugins": "plugins",
                "pypc_rpc_methods": "rpc_methods", "pypc_schemas": "schemas"}

packages = []
for name, folder in PACKAGE_DIRS.items():
    packages.append(name)
    packages += [f"{name}.{sub}" for sub in find_packages(folder)]

setup(packages=packages)
