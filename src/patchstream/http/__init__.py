"""What every HTTP service shares: body limits, error answers, keys and tenants."""
