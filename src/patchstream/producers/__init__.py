"""Write side: the webhook gateway, the agent patch API and its clients (SDK, hooks)."""
