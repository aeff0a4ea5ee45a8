"""Building, publishing and inspecting the pirex image collection."""
