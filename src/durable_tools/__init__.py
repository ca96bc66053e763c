"""durable-tools."""
