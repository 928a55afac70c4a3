"""What the kernel knows of stored entities: `kinds` (the kinds plugins declare), `catalog`
(list, resolve and show stored entities), `export` (write them back out as a bundle folder,
which is also how a stored task runs by id: `runnable`) and `deploy` (a stored env kept up).
The commands that put, validate and export entities come with agentenv-stored-entities.
Nothing here knows about click."""
