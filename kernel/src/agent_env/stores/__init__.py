"""Stores: the four interfaces (`base`), the local backends, and the versioned-entity layer."""
