"""skyl-sandbox: an offline, scripted fake LLM provider for learning and testing tool-calling loops."""
