"""Secret-sharing engine over Z/2^64 (see DESIGN.md §4)."""
