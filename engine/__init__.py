"""The rule engine side: facts, rule loading and compilation, the durable-rules adapter,
ranking and fixes."""
