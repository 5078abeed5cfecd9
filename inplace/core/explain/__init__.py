"""`inplace explain`: why a resize is where it is, told from the log (issue 19)."""
