"""Computer drivers: envs that serve a computer's screen and input as tools."""
