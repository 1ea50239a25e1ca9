"""Packages of the distribution; everything else is in pyproject.toml.

`studio.resources` is the top-level `resources/` folder (mapped in pyproject's package-dir), which
`packages.find` cannot discover; so the package list is computed here: every package under
studio/ plus that one.
"""

from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["studio", "studio.*"]), "studio.resources"])
