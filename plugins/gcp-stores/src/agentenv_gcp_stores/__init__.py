"""agent-env store backends on Google Cloud: `gcs` objects, `firestore` documents,
`secretmanager` secrets and `artifactregistry` images, selected in `[stores]`."""
