"""The small HTTP server the sandbox benchmarks start (200 `pong` to every GET on `$PORT`).

Benchmarks run without pytest installed, so they import no test helper (the sandbox contract
in agentenv_testing imports pytest)."""

SERVER = """\
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"pong")
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("0.0.0.0", int(os.environ.get("PORT") or 8080)), H).serve_forever()
"""
