"""Modal dialogs: help, raw value, export."""
