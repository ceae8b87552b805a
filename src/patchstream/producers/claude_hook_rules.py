"""What the Claude Code hook never sends anywhere, whatever the repository says."""

# Secrets and keys: never published as files, and a command naming one keeps its output local.
DENY_PATTERNS = (".env*", "*.pem", "*.key", "id_*", "*.p12", "*.pfx")
