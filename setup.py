"""Maps actors/ and audio/ into the tamesu namespace (see ARCHITECTURE.md, Layout)."""

from setuptools import find_packages, setup

ROOTS = {"tamesu": "tamesu", "tamesu.actors": "actors", "tamesu.audio": "audio"}

packages = ["tamesu", *(f"tamesu.{p}" for p in find_packages("tamesu"))]
package_dir = dict(ROOTS)
for name, folder in (("tamesu.actors", "actors"), ("tamesu.audio", "audio")):
    packages.append(name)
    packages += [f"{name}.{p}" for p in find_packages(folder)]

setup(packages=packages, package_dir=package_dir)
