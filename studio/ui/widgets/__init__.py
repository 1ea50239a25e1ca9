"""Widgets of the studio: the main window, the thread view and its tabs, the threshold bars."""
