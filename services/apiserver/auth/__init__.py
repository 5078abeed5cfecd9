"""Who is asking (authentication), may they (authorization), and the record of it (audit)."""
