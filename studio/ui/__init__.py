"""The PySide6 studio: the only package that imports Qt."""
