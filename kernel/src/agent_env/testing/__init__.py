"""agent-env's pytest plugin: fixtures for plugin authors and the contract suites.

Loaded automatically through the `pytest11` entry point when agentenv-kernel is installed.
"""
