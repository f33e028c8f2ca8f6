"""The test Hub: Debian's nginx on loopback, started in the foreground with a
generated config, serving a hub-shaped tree from a test folder.  The net and
netcache groups (t_net.py, t_netcache.py) test against it and `make bench
--parts net` (tools/bench_net.py) measures through it; it needs neither numpy
nor anything of the tests beyond a few wf_harness helpers.

Server block "hub" answers /api/models/ORG/NAME/revision/REV and
/api/models/ORG/NAME/tree/COMMIT from static JSON files, and
/ORG/NAME/resolve/COMMIT/FILE as the Hub does: small files with ETag and
X-Repo-Commit, LFS files (.safetensors, .gguf) by a 302 to a second server
block standing for the CDN, with X-Linked-Etag, X-Linked-Size and
X-Repo-Commit; refusals with X-Error-Code (RepoNotFound, RevisionNotFound,
GatedRepo, EntryNotFound).  The CDN block is nginx's static module: Range,
ETag and If-Match as nginx does them.  Bytes sent are counted from the access
log ($body_bytes_sent).
"""

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time

from wf_harness import Fail, free_port, new_dir, sha256_file as sha256

NGINX = "/usr/sbin/nginx"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
TOKEN = "hf_good_token"


def git_blob_id(path):
    """The id git (and the Hub's listing, as "oid") gives a file: the SHA-1
    of "blob SIZE\\0" and its bytes."""
    with open(path, "rb") as f:
        data = f.read()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(name):
    return name.endswith(".safetensors") or name.endswith(".gguf")


class Hub:
    """nginx on two free ports: the hub and its CDN; repos added by add()."""

    def __init__(self):
        self.dir = new_dir("nginx-")
        self.www = os.path.join(self.dir, "hub")
        self.cdn = os.path.join(self.dir, "cdn")
        os.makedirs(self.www)
        os.makedirs(self.cdn)
        self.port, self.cdn_port = free_port(), free_port()
        self.cdn_public = None  # the port /resolve/ redirects to, when not cdn_port (a proxy in front)
        self.repos = {}   # repo -> {rel: (size, sha256)}
        self.gated = set()
        self.private = set()
        self.proc = None

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def cdn_url(self, repo, rel):
        return "http://127.0.0.1:%d/%s/%s/%s" % (self.cdn_public or self.cdn_port, repo, COMMIT, rel)

    def add(self, repo, folder, gated=False, missing=(), private=False, wrong_oid=()):
        """Serves folder's files as repo at COMMIT (revision main); the listing
        also names the files in `missing`, which are not served, and lists
        another SHA-256 than their bytes' for the LFS files in `wrong_oid`."""
        files = {}
        for root, _, names in os.walk(folder):
            for n in names:
                p = os.path.join(root, n)
                files[os.path.relpath(p, folder)] = p
        tree, meta = [], {}
        for rel, p in sorted(files.items()):
            size, digest = os.path.getsize(p), sha256(p)
            meta[rel] = (size, digest)
            ent = {"type": "file", "path": rel, "oid": git_blob_id(p), "size": size}
            if is_lfs(rel):
                # "oid" is then the pointer file's id, which no client holds the bytes to
                ent["oid"] = digest[:40]
                listed = ("%064x" % (int(digest, 16) ^ 1)) if rel in wrong_oid else digest
                ent["lfs"] = {"oid": listed, "size": size, "pointerSize": 134}
                dst = os.path.join(self.cdn, repo, COMMIT, rel)
            else:
                dst = os.path.join(self.www, repo, "resolve", COMMIT, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copyfile(p, dst)
            tree.append(ent)
        for rel in missing:
            tree.append({"type": "file", "path": rel, "oid": "0" * 40, "size": 10})
        api = os.path.join(self.www, "api", "models", repo)
        os.makedirs(os.path.join(api, "revision"), exist_ok=True)
        os.makedirs(os.path.join(api, "tree"), exist_ok=True)
        with open(os.path.join(api, "revision", "main"), "w") as f:
            json.dump({"id": repo, "sha": COMMIT, "siblings": [{"rfilename": e["path"]} for e in tree]}, f)
        # the listing in two pages, the first with a Link to the second
        half = len(tree) // 2
        with open(os.path.join(api, "tree", COMMIT), "w") as f:
            json.dump(tree[:half], f)
        with open(os.path.join(api, "tree", COMMIT + "-p2"), "w") as f:
            json.dump(tree[half:], f)
        self.repos[repo] = meta
        if gated:
            self.gated.add(repo)
        if private:
            self.private.add(repo)

    def conf(self):
        lfs_map, oid_map = [], []
        for repo, meta in self.repos.items():
            for rel, (size, digest) in meta.items():
                if is_lfs(rel):
                    lfs_map.append('    "/%s/resolve/%s/%s" "%d %s";' % (repo, COMMIT, rel, size, digest))
                else:
                    oid = git_blob_id(os.path.join(self.www, repo, "resolve", COMMIT, rel))
                    oid_map.append('    "/%s/resolve/%s/%s" "\\"%s\\"";' % (repo, COMMIT, rel, oid))
        gated = "\n".join("""
        location ^~ /%s/resolve/ {
            add_header X-Error-Code GatedRepo always;
            add_header X-Error-Message "Access to model %s is restricted." always;
            if ($http_authorization = "") { return 401; }
            return 403;
        }""" % (r, r) for r in sorted(self.gated))
        revs = "\n".join("""
        location ^~ /api/models/%s/ {
            default_type application/json;
            error_page 404 = @norev;
            location ~ /tree/%s$ {
                add_header Link '<http://127.0.0.1:%d/api/models/%s/tree/%s-p2?recursive=true&expand=false>; rel="next"';
            }
        }""" % (r, COMMIT, self.port, r, COMMIT) for r in sorted(self.repos))
        private = "\n".join("""
        if ($uri ~ "^/(api/models/)?%s/") { set $gate "${gate}p"; }""" % r for r in sorted(self.private))
        return """
user root;
daemon off;
master_process on;
worker_processes 1;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
events { worker_connections 256; }
http {
    log_format bytes '$server_port $request_method $uri $status $body_bytes_sent';
    access_log %(d)s/access.log bytes;
    client_body_temp_path %(d)s/tmp-body;
    proxy_temp_path %(d)s/tmp-proxy;
    fastcgi_temp_path %(d)s/tmp-fcgi;
    uwsgi_temp_path %(d)s/tmp-uwsgi;
    scgi_temp_path %(d)s/tmp-scgi;
    sendfile on;
    map_hash_bucket_size 256;
    map $http_authorization $deny {
        default "0";
        "Bearer %(token)s" "1";
    }
    map $uri $linked {
        default "";
%(lfs)s
    }
    # a small file's ETag is its git blob id, as the Hub sends it
    map $uri $oid_etag {
        default "";
%(oids)s
    }
    server {
        listen 127.0.0.1:%(port)d;
        root %(www)s;
        default_type application/octet-stream;
        # a private repo: RepoNotFound without the token, as the Hub answers
        set $gate $deny;
%(private)s
        error_page 418 = @private;
        if ($gate = "0p") { return 418; }
        location @private {
            add_header X-Error-Code RepoNotFound always;
            return 401;
        }
%(gated)s
%(revs)s
        location /api/ {
            add_header X-Error-Code RepoNotFound always;
            add_header X-Error-Message "Repository not found" always;
            return 401;
        }
        location @norev {
            add_header X-Error-Code RevisionNotFound always;
            return 404;
        }
        location ~ "^/(?<repo>[^/]+/[^/]+)/resolve/(?<commit>[0-9a-f]{40})/(?<file>.+)$" {
            etag off;
            add_header X-Repo-Commit $commit always;
            add_header ETag $oid_etag;
            if ($linked ~ "^(?<lsize>[0-9]+) (?<lsha>[0-9a-f]+)$") {
                add_header X-Repo-Commit $commit always;
                add_header X-Linked-Size $lsize always;
                add_header X-Linked-Etag '"$lsha"' always;
                return 302 http://127.0.0.1:%(cdn_public)d/$repo/$commit/$file;
            }
            error_page 404 = @noentry;
        }
        location @noentry {
            add_header X-Error-Code EntryNotFound always;
            return 404;
        }
    }
    server {
        listen 127.0.0.1:%(cdn_port)d;
        root %(cdn)s;
        default_type application/octet-stream;
        # pre-signed URLs: a token sent here is one leaked off the Hub's host
        if ($http_authorization) { return 400; }
    }
}
""" % {"d": self.dir, "www": self.www, "cdn": self.cdn, "port": self.port, "cdn_port": self.cdn_port,
       "cdn_public": self.cdn_public or self.cdn_port, "lfs": "\n".join(lfs_map), "oids": "\n".join(oid_map),
       "gated": gated, "revs": revs,
       "private": private, "token": TOKEN}

    def start(self):
        with open(os.path.join(self.dir, "nginx.conf"), "w") as f:
            f.write(self.conf())
        self.log = open(os.path.join(self.dir, "nginx.out"), "wb")
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-c", os.path.join(self.dir, "nginx.conf")],
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        t0 = time.monotonic()
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.cdn_port), timeout=1).close()
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None:
                    raise Fail("nginx exited: %s" % open(os.path.join(self.dir, "nginx.out")).read()[-800:])
                if time.monotonic() - t0 > 10:
                    raise Fail("nginx not listening after 10 s")
                time.sleep(0.02)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
            self.log = None

    def sent(self, port=None, uri_part=""):
        """Body bytes the server sent so far (the CDN's by default) for URIs with uri_part."""
        port = port or self.cdn_port
        total = 0
        with open(os.path.join(self.dir, "access.log")) as f:
            for line in f:
                w = line.split()
                if len(w) >= 5 and w[0] == str(port) and uri_part in w[2]:
                    total += int(w[4])
        return total
