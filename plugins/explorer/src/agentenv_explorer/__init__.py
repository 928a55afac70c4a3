"""The explorer: `agent-env up`, a Starlette app with a JSON API under `/api/v1` and plain
HTML/JS pages (`static/`). `hooks` registers the command; `command` starts uvicorn; `app`
builds the application; `guards` refuses foreign hosts, cross-site writes and (off loopback)
requests without the token; `api_*` hold the routes; `launcher` starts and cancels runs."""
