"""Widgets of the diagnosis screen."""
