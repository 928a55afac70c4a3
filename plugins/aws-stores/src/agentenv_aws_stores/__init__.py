"""agent-env store backends on AWS: `s3` objects, `dynamodb` documents, `secretsmanager`
secrets and `ecr` images, selected in `[stores]` of `.agentenv/config.toml`."""
