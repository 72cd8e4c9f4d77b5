"""git_http_server.py ROOT PORT_FILE [DELAY_S]: a git server over HTTP on 127.0.0.1 for //hub's
tests — git's own smart-HTTP CGI (git http-backend) for the repositories under ROOT,
plus the Git LFS batch API with the basic transfer adapter (objects kept under ROOT/lfs/<oid>,
their URLs signed as a real LFS server signs them), and the Hub's POST /api/repos/create
({"name", "organization", "private"}; 409 when the repository exists; the visibility is kept in
<repo>.git/loom-visibility). Every other request is refused with 401 unless its Basic-auth
password (or Bearer token) is the environment's GIT_SERVER_TOKEN — from the environment, so that
tests sampling /proc/*/cmdline for the token do not find it in the server's own. The port it
listens on is written to PORT_FILE. DELAY_S slows every push request down (the asynchrony
tests). With EXIT_AFTER_PUSHES=N in the environment the server exits after its N-th push (a
remote going down mid-run). Repositories are otherwise created on first push (bare, HEAD
main)."""
import base64
import hashlib
import hmac
import http.server
import json
import os
import socketserver
import subprocess
import sys
import time

ROOT, PORT_FILE = sys.argv[1], sys.argv[2]
TOKEN = os.environ["GIT_SERVER_TOKEN"]
DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
EXIT_AFTER_PUSHES = int(os.environ.get("EXIT_AFTER_PUSHES", "0"))
PUSHES = [0]
SECRET = os.urandom(16)  # signs LFS object URLs (as a real LFS server signs its hrefs)


def signature(oid):
    return hmac.new(SECRET, oid.encode(), hashlib.sha256).hexdigest()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # the tests grep stderr for tokens: log paths only
        sys.stderr.write("git_http_server: %s %s\n" % (self.command, self.path.split("?")[0]))

    def authorized(self):
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            user_pass = base64.b64decode(auth[6:]).decode()
            if user_pass.split(":", 1)[-1] == TOKEN:
                return True
        if auth == "Bearer " + TOKEN:
            return True
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="loom-test"')
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        return False

    def body(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        if n:
            return self.rfile.read(n)
        if self.headers.get("Transfer-Encoding", "") == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def reply(self, code, data=b"", ctype="application/octet-stream"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def repo_of(self, path):
        # /user/name[.git]/info/refs -> user/name.git
        parts = path.split("?")[0].strip("/").split("/")
        for i, p in enumerate(parts):
            if p in ("info", "git-upload-pack", "git-receive-pack", "objects", "HEAD"):
                return "/".join(parts[:i]), "/" + "/".join(parts[i:])
        return "/".join(parts), "/"

    def lfs(self, repo, rest, data):
        store = os.path.join(ROOT, "lfs")
        os.makedirs(store, exist_ok=True)
        if rest == "/info/lfs/objects/batch" and self.command == "POST":
            req = json.loads(data)
            base = "http://127.0.0.1:%d/%s/lfs-object/" % (self.server.server_address[1], repo)
            objects = []
            for o in req.get("objects", []):
                have = os.path.exists(os.path.join(store, o["oid"]))
                entry = {"oid": o["oid"], "size": o["size"]}
                href = base + o["oid"] + "?sig=" + signature(o["oid"])
                if req["operation"] == "upload" and not have:
                    entry["actions"] = {"upload": {"href": href}}
                elif req["operation"] == "download":
                    if not have:
                        entry["error"] = {"code": 404, "message": "not found"}
                    else:
                        entry["actions"] = {"download": {"href": href}}
                objects.append(entry)
            out = json.dumps({"transfer": "basic", "objects": objects}).encode()
            return self.reply(200, out, "application/vnd.git-lfs+json")
        if rest.startswith("/lfs-object/"):
            oid, _, query = rest.rsplit("/", 1)[1].partition("?sig=")
            path = os.path.join(store, oid)
            if self.command == "PUT":
                with open(path, "wb") as f:
                    f.write(data)
                return self.reply(200)
            if os.path.exists(path):
                return self.reply(200, open(path, "rb").read())
            return self.reply(404)
        return self.reply(404)

    def create_repo(self, req):
        name = req["name"] if not req.get("organization") else req["organization"] + "/" + req["name"]
        full = os.path.join(ROOT, name + ".git")
        if os.path.exists(full):
            return self.reply(409, json.dumps({"error": "You already created this model repo"}).encode(),
                              "application/json")
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", full], check=True)
        with open(os.path.join(full, "loom-visibility"), "w") as f:
            f.write("private" if req.get("private") else "public")
        url = "http://127.0.0.1:%d/%s" % (self.server.server_address[1], name)
        return self.reply(200, json.dumps({"url": url}).encode(), "application/json")

    def handle_any(self):
        data = self.body()  # read first: a refused request's body must not be taken as the next
        if "/lfs-object/" in self.path:
            oid, _, sig = self.path.rsplit("/", 1)[1].partition("?sig=")
            if not hmac.compare_digest(sig, signature(oid)):
                return self.reply(403)
        elif not self.authorized():
            return
        path = self.path
        if path == "/api/repos/create" and self.command == "POST":
            return self.create_repo(json.loads(data))
        if "/info/lfs/" in path or "/lfs-object/" in path:
            marker = "/info/lfs/" if "/info/lfs/" in path else "/lfs-object/"
            repo, rest = path.split(marker, 1)
            return self.lfs(repo.strip("/"), marker + rest, data)
        repo, rest = self.repo_of(path)
        if not repo.endswith(".git"):
            repo += ".git"
        full = os.path.join(ROOT, repo)
        if "git-receive-pack" in path:
            if DELAY:
                time.sleep(DELAY)
            if not os.path.exists(full):
                subprocess.run(["git", "init", "-q", "--bare", "-b", "main", full], check=True)
        query = path.split("?", 1)[1] if "?" in path else ""
        env = dict(os.environ, GIT_PROJECT_ROOT=ROOT, GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO="/" + repo + rest, QUERY_STRING=query,
                   REQUEST_METHOD=self.command, REMOTE_USER="loom", REMOTE_ADDR="127.0.0.1",
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(data)), GIT_HTTP_MAX_REQUEST_BUFFER="1000M")
        if not os.path.exists(full):
            return self.reply(404, b"no such repository")
        out = subprocess.run(["git", "http-backend"], input=data, env=env,
                             capture_output=True).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.split(b"\r\n"):
            if not line:
                continue
            k, _, v = line.decode().partition(":")
            if k.lower() == "status":
                status = int(v.strip().split()[0])
            else:
                headers.append((k, v.strip()))
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        if "git-receive-pack" in path and self.command == "POST" and EXIT_AFTER_PUSHES:
            PUSHES[0] += 1
            if PUSHES[0] >= EXIT_AFTER_PUSHES:
                self.wfile.flush()
                sys.stderr.write("git_http_server: going down after %d pushes\n" % PUSHES[0])
                os._exit(0)

    do_GET = handle_any
    do_POST = handle_any
    do_PUT = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
with open(PORT_FILE + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(PORT_FILE + ".tmp", PORT_FILE)
server.serve_forever()
