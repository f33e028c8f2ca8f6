"""Group s3: s3:// sources (src/net/wf_s3.c, docs/remote.md) against Ceph's
RADOS Gateway, started here on loopback from Debian's packages (wf_rgw.py):
a store that checks SigV4 signatures, ETags and If-Match for real.  The test
objects are uploaded with rclone, a client people use.  The gateway lists at
most 7 keys a page, so every folder needs the listing's continuation.
"""

import os
import shutil
import subprocess
import sys

import numpy as np

import wf_harness
import wf_rgw
from wf_harness import Fail, Mount, check, expect_eio_after_change, new_dir, sha256_file as sha256, skip_or_fail
from t_net import make_models, same_trees, refused

AWS_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
            "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE",
            "AWS_SHARED_CREDENTIALS_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_CA_BUNDLE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")


def rclone(rgw, *args, acl=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    extra = ["--s3-acl", acl, "--s3-bucket-acl", acl] if acl else []
    r = subprocess.run(["rclone", "--retries", "2", "--low-level-retries", "2"] + extra + list(args),
                       stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=300)
    if r.returncode != 0:
        raise Fail("rclone %s: exit %d: %s" % (args[0], r.returncode, r.stderr.decode(errors="replace")[-400:]))


class Env:
    """The process environment for one check: the AWS settings given, none of the machine's."""

    def __init__(self, **kw):
        self.kw = kw

    def __enter__(self):
        self.saved = {k: os.environ.get(k) for k in set(AWS_KEYS) | set(self.kw) | {"HOME"}}
        for k in AWS_KEYS:
            os.environ.pop(k, None)
        os.environ["HOME"] = self.kw.pop("HOME", None) or new_dir("home-")
        for k, v in self.kw.items():
            os.environ[k] = v
        return self

    def __exit__(self, *a):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def group_s3():
    if not wf_rgw.available():
        skip_or_fail("no radosgw (apt-get install ceph-mon ceph-osd radosgw)")
    if not shutil.which("rclone"):
        skip_or_fail("no rclone (apt-get install rclone)")
    base = new_dir("s3models-")
    models = {}

    def build():
        models["tiny"], models["gg"], models["big"], models["chg"] = make_models(base)
    if not check("s3: test models made", build):
        return
    rgw = wf_rgw.Rgw(max_list=7)
    stage = new_dir("stage-")
    saved = {k: os.environ.get(k) for k in ("TMPDIR", "XDG_CACHE_HOME")}
    try:
        if not check("s3: radosgw started (mon, osd on memstore, beast)", rgw.start):
            return
        os.environ["TMPDIR"] = stage
        os.environ["XDG_CACHE_HOME"] = new_dir("xdg-")

        def upload():
            rem = rgw.rclone_remote()
            rclone(rgw, "mkdir", rem + "models")
            rclone(rgw, "copy", models["tiny"], rem + "models/team/Tiny-Llama")
            rclone(rgw, "copy", models["gg"], rem + "models/gg")
            rclone(rgw, "copy", models["chg"], rem + "models/chg")
            rclone(rgw, "copy", models["gg"], rem + "pub/gg", acl="public-read")
            # the model's files after 14 others in key order: only a listing
            # that follows its continuation (7 keys a page here) finds them
            paged = models["paged"] = os.path.join(base, "paged")
            shutil.copytree(models["tiny"], paged)
            for i in range(14):
                with open(os.path.join(paged, "a%02d-notes.md" % i), "w") as f:
                    f.write("notes %d\n" % i)
            rclone(rgw, "copy", paged, rem + "models/paged")
            return "%d files" % sum(len(fs) for _, _, fs in os.walk(base))
        if not check("s3: test objects uploaded with rclone", upload):
            return
        run_checks(rgw, models)
        hostile_checks()
    finally:
        rgw.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def staged_gone():
        left = os.listdir(stage)
        if left:
            raise Fail("staging folders left behind: %s" % left[:5])
    check("s3: every daemon removed its staging folder", staged_gone)

    def stopped():
        if os.path.exists(rgw.dir):
            raise Fail("the gateway's folder %s is left behind" % rgw.dir)
    check("s3: radosgw stopped, nothing left", stopped)


class Hostile:
    """A server that answers as no store should: "endless" lists 1,000 keys a page
    forever; "html" answers every request with a web page; "bighdr" sends a 1 MB header;
    /api/models/org/html/... (as a Hub) answers HTML; /file.gguf answers 200 to a range."""

    def __init__(self):
        import http.server
        import threading

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def send(self, code, body, ctype, extra=()):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in extra:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                from urllib.parse import urlparse, parse_qs
                u = urlparse(self.path)
                q = parse_qs(u.query)
                if u.path.startswith("/endless"):
                    page = int(q.get("continuation-token", ["0"])[0])
                    keys = "".join("<Contents><Key>m/%08d.bin</Key><Size>1</Size><ETag>&quot;e&quot;</ETag>"
                                   "</Contents>" % (page * 1000 + i) for i in range(1000))
                    body = ("<?xml version=\"1.0\"?><ListBucketResult><Name>endless</Name><IsTruncated>true"
                            "</IsTruncated>%s<NextContinuationToken>%d</NextContinuationToken></ListBucketResult>"
                            % (keys, page + 1)).encode()
                    self.send(200, body, "application/xml")
                elif u.path.startswith("/bighdr"):
                    self.send(200, b"x", "application/xml", [("X-Junk", "a" * (1 << 20))])
                else:
                    self.send(200, b"<!doctype html><html><body>Welcome to our portal</body></html>", "text/html")

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.srv.daemon_threads = True
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def hostile_checks():
    import time
    h = Hostile()
    try:
        cases = [("s3://, a listing that never ends (10^6 keys and more)", "s3://endless/m/",
                  "more than 100000 objects"),
                 ("s3://, a store that answers HTML", "s3://html/m/", "the listing is not a ListBucketResult"),
                 ("s3://, a 1 MB header", "s3://bighdr/m/", "a header longer than libcurl's"),
                 ("hf://, a Hub that answers HTML", "hf://org/html", "gave no commit"),
                 ("https://, a server that answers a range with a whole page", h.url() + "/file.gguf",
                  "does not answer Range requests"),
                 ("a malformed URL", "https://", "weightfs: https://")]
        for what, src, want in cases:
            def one(src=src, want=want):
                with Env(AWS_ENDPOINT_URL=h.url()):
                    os.environ["HF_ENDPOINT"] = h.url()
                    try:
                        t0 = time.monotonic()
                        line = refused(src, want)
                        took = time.monotonic() - t0
                    finally:
                        os.environ.pop("HF_ENDPOINT", None)
                if took > 30:
                    raise Fail("refused, but after %.0f s" % took)
                return "%s (%.1f s)" % (line, took)
            check("s3/net: refused with one line, no hang: %s" % what, one)
    finally:
        h.stop()


def keys(rgw, **kw):
    return Env(AWS_ACCESS_KEY_ID=rgw.key, AWS_SECRET_ACCESS_KEY=rgw.secret, AWS_ENDPOINT_URL=rgw.endpoint, **kw)


def run_checks(rgw, models):
    def folder():
        with keys(rgw), Mount(models["tiny"]) as lm, Mount("s3://models/team/Tiny-Llama/") as rm:
            return same_trees(lm.mp, rm.mp)
    check("s3: a sharded safetensors folder (prefix/) = the local mount, every file", folder)

    def offline():
        # an online mount with a cache records what it staged; -o offline
        # stages it again from the record and reads from the cache, sending
        # nothing: every request would go to a dead proxy
        cdir = new_dir("s3cache-")
        dead = {"http_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9", "no_proxy": "",
                "NO_PROXY": ""}
        out = []
        for src, local in (("s3://models/team/Tiny-Llama/", models["tiny"]),
                           ("s3://models/gg/demo-llama.gguf", os.path.join(models["gg"], "demo-llama.gguf"))):
            with Mount(local) as lm:
                with keys(rgw), Mount(src, opts=["-o", "cache=" + cdir]) as rm:
                    same_trees(lm.mp, rm.mp)
                with Env(AWS_ENDPOINT_URL=rgw.endpoint, **dead), \
                        Mount(src, opts=["-o", "offline,cache=" + cdir]) as om:
                    out.append(same_trees(lm.mp, om.mp))
        with Env(AWS_ENDPOINT_URL=rgw.endpoint, **dead):
            r = subprocess.run([wf_harness.BIN, "-f", "-o", "offline,cache=" + cdir, "s3://models/paged/", new_dir()],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        lines = r.stderr.decode(errors="replace").splitlines()
        if r.returncode == 0 or len(lines) != 1 or "offline" not in lines[0]:
            raise Fail("offline, never mounted online: exit %d, stderr %r" % (r.returncode, lines[:3]))
        return "; ".join(out) + "; never mounted: %s" % lines[0][:100]
    check("s3: -o offline after an online mount = the same bytes, no request (folder and one object)", offline)

    def paged():
        with keys(rgw), Mount(models["paged"]) as lm, Mount("s3://models/paged/") as rm:
            return same_trees(lm.mp, rm.mp) + ", %d objects listed 7 a page" % len(os.listdir(models["paged"]))
    check("s3: a folder whose listing takes 3 pages (continuation) = the local mount", paged)

    def folder_noslash():
        with keys(rgw), Mount(models["gg"]) as lm, Mount("s3://models/gg") as rm:
            return same_trees(lm.mp, rm.mp)
    check("s3: a prefix without its slash is the folder", folder_noslash)

    def one_object():
        with keys(rgw), Mount(os.path.join(models["gg"], "demo-llama.gguf")) as lm, \
                Mount("s3://models/gg/demo-llama.gguf") as rm:
            return same_trees(lm.mp, rm.mp)
    check("s3: one object = the local mount of the file", one_object)

    def profile():
        home = new_dir("home-")
        os.makedirs(os.path.join(home, ".aws"))
        with open(os.path.join(home, ".aws", "credentials"), "w") as f:
            f.write("[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n"
                    "# the team's\n[dev]\naws_access_key_id = %s\naws_secret_access_key=%s\n" % (rgw.key, rgw.secret))
        with open(os.path.join(home, ".aws", "config"), "w") as f:
            f.write("[default]\nregion = eu-west-1\n[profile dev]\nregion = us-east-1\nendpoint_url = %s/\n"
                    % rgw.endpoint)
        with Env(HOME=home, AWS_PROFILE="dev"), Mount(models["gg"]) as lm, Mount("s3://models/gg/") as rm:
            return same_trees(lm.mp, rm.mp)
    check("s3: credentials, region and endpoint from ~/.aws (AWS_PROFILE=dev)", profile)

    def process():
        # credentials from the profile's credential_process (aws-vault, SSO
        # helpers): a program printing the CLI's JSON, run without a shell
        home = new_dir("home with space-")
        os.makedirs(os.path.join(home, ".aws"))
        helper = os.path.join(home, "creds helper.sh")
        with open(helper, "w") as f:
            f.write('#!/bin/sh\n[ "$1" = "--for" ] && [ "$2" = "team models" ] || exit 9\n'
                    'printf \'{"Version": 1, "AccessKeyId": "%s", "SecretAccessKey": "%s", '
                    '"Expiration": "2999-01-01T00:00:00Z"}\'\n' % (rgw.key, rgw.secret))
        os.chmod(helper, 0o755)
        with open(os.path.join(home, ".aws", "config"), "w") as f:
            f.write("[profile proc]\ncredential_process = \"%s\" --for 'team models'\nendpoint_url = %s\n"
                    % (helper, rgw.endpoint))
        with Env(HOME=home, AWS_PROFILE="proc"), Mount(models["gg"]) as lm, Mount("s3://models/gg/") as rm:
            return same_trees(lm.mp, rm.mp)
    check("s3: credentials from the profile's credential_process", process)

    def container():
        # an EKS pod (Pod Identity) or ECS task: credentials from the agent
        # AWS_CONTAINER_CREDENTIALS_FULL_URI names, asked with the token file's
        # contents as the Authorization header
        import http.server
        import json
        import threading
        tok = "eks-pod-token-%d" % os.getpid()
        asked = []

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                asked.append((self.path, self.headers.get("Authorization")))
                ok = self.headers.get("Authorization") == tok
                body = json.dumps({"AccessKeyId": rgw.key, "SecretAccessKey": rgw.secret, "Token": "",
                                   "Expiration": "2999-01-01T00:00:00Z"} if ok else {"message": "denied"}).encode()
                self.send_response(200 if ok else 403)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        tfile = os.path.join(new_dir("tok-"), "token")
        with open(tfile, "w") as f:
            f.write(tok + "\n")
        uri = "http://127.0.0.1:%d/v1/credentials" % srv.server_address[1]
        try:
            with Env(AWS_ENDPOINT_URL=rgw.endpoint, AWS_CONTAINER_CREDENTIALS_FULL_URI=uri,
                     AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=tfile), Mount(models["gg"]) as lm, \
                    Mount("s3://models/gg/") as rm:
                info = same_trees(lm.mp, rm.mp)
            if asked[:1] != [("/v1/credentials", tok)]:
                raise Fail("the agent was asked %r" % asked[:3])
            with Env(AWS_ENDPOINT_URL=rgw.endpoint, AWS_CONTAINER_CREDENTIALS_FULL_URI=uri,
                     AWS_CONTAINER_AUTHORIZATION_TOKEN="wrong"):
                r = subprocess.run([wf_harness.BIN, "-f", "s3://models/gg/", new_dir()], stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=60)
        finally:
            srv.shutdown()
            srv.server_close()
        lines = r.stderr.decode(errors="replace").splitlines()
        if r.returncode == 0 or len(lines) != 1 or "HTTP 403" not in lines[0]:
            raise Fail("a refused token: exit %d, %r" % (r.returncode, lines[:3]))
        return "%s; a wrong token: %s" % (info, lines[0][:90])
    check("s3: credentials from a container's endpoint (EKS Pod Identity, ECS), the token file's Authorization",
          container)

    def anonymous():
        with Env(AWS_ENDPOINT_URL=rgw.endpoint), Mount(models["gg"]) as lm, Mount("s3://pub/gg/") as rm:
            return same_trees(lm.mp, rm.mp)
    check("s3: a public bucket, no credentials: unsigned requests", anonymous)

    def commands():
        out = []
        with keys(rgw):
            for cmd in (["ls"], ["info"], ["cat", "output_norm.weight"], ["stats", "output_norm.weight"]):
                got = {}
                for src in ("s3://models/gg/", models["gg"]):
                    r = subprocess.run([wf_harness.BIN, cmd[0], src] + cmd[1:], stdin=subprocess.DEVNULL,
                                       capture_output=True, timeout=60)
                    if r.returncode != 0:
                        raise Fail("weightfs %s %s: exit %d: %s" % (cmd[0], src, r.returncode, r.stderr[:300]))
                    got[src] = r.stdout
                if got["s3://models/gg/"] != got[models["gg"]] or not got[models["gg"]]:
                    raise Fail("weightfs %s: s3:// and the local folder print different things" % cmd[0])
                out.append(cmd[0])
        return ", ".join(out) + " identical"
    check("s3: commands take s3:// (ls, info, cat, stats = the local folder's)", commands)

    def verify():
        d = new_dir("manifest-")
        man = os.path.join(d, "s3.json")
        with keys(rgw):
            r = subprocess.run([wf_harness.BIN, "verify", "--write", man, "s3://models/team/Tiny-Llama/"],
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        out = r.stdout.decode(errors="replace")
        if r.returncode != 0:
            raise Fail("verify s3://: exit %d: %s %s" % (r.returncode, out[-300:], r.stderr[-300:]))
        for n in sorted(os.listdir(models["tiny"])):
            p = os.path.join(models["tiny"], n)
            if n.endswith(".safetensors") and "%s  %s" % (sha256(p), n) not in out:
                raise Fail("no sha256sum line for %s in %r" % (n, out[:500]))
            if (n.endswith(".safetensors") or n == "config.json") and \
                    "%s: no digest published by the source" % n not in out:
                raise Fail("%s not named as having no digest to check against: %r" % (n, out[:500]))
        r = subprocess.run([wf_harness.BIN, "verify", "--against", man, models["tiny"]], stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            raise Fail("--against on the local folder: exit %d: %r" % (r.returncode, r.stdout[-300:]))
        return "exit 0, every file read, none with a digest; its manifest holds the local folder"
    check("s3: verify s3:// (every byte read, no digest to check against; --write then --against locally)",
          verify)

    def diff_two():
        # two remote sources in one process, each staged in its own folder
        got = {}
        with keys(rgw):
            for a, b in (("s3://models/gg/", "s3://pub/gg/"), (models["gg"], models["gg"]),
                         ("s3://models/chg/", "s3://models/gg/"), (models["chg"], models["gg"])):
                r = subprocess.run([wf_harness.BIN, "diff", a, b], stdin=subprocess.DEVNULL, capture_output=True,
                                   timeout=120)
                got[(a, b)] = (r.returncode, r.stdout)
        same = got[("s3://models/gg/", "s3://pub/gg/")], got[(models["gg"], models["gg"])]
        other = got[("s3://models/chg/", "s3://models/gg/")], got[(models["chg"], models["gg"])]
        if same[0] != same[1] or other[0] != other[1]:
            raise Fail("diff of two s3:// sources differs from diff of the local folders: %r vs %r"
                       % (same[0][1][:200], same[1][1][:200]))
        if other[1][0] == 0 or not other[1][1]:
            raise Fail("diff of two different models found nothing: %r" % (other[1],))
        return "exit %d and %d, output identical" % (same[1][0], other[1][0])
    check("s3: diff of two s3:// sources = diff of the local folders", diff_two)

    def python_module():
        from t_demo import module_env
        script = (
            "import sys, hashlib, weightfs\n"
            "def digest(src):\n"
            "    h = hashlib.sha256()\n"
            "    with weightfs.open(src) as m:\n"
            "        for name in m.keys():\n"
            "            h.update(name.encode()); h.update(m.get(name).tobytes())\n"
            "    with weightfs.safe_open(src) as f:\n"
            "        for k in f.keys():\n"
            "            h.update(f.get_tensor(k).tobytes())\n"
            "    return h.hexdigest()\n"
            "a, b = digest(sys.argv[1]), digest(sys.argv[2])\n"
            "print(a, b)\n"
            "sys.exit(0 if a == b else 3)\n")
        with keys(rgw):
            env = module_env()
            r = subprocess.run(["/usr/bin/python3", "-c", script, "s3://models/team/Tiny-Llama/", models["tiny"]],
                               env=env, capture_output=True, timeout=300)
        if r.returncode != 0:
            raise Fail("exit %d: %s %s" % (r.returncode, r.stdout[-300:], r.stderr[-600:]))
        return "every tensor by open() and safe_open() identical (%s)" % r.stdout.split()[0][:16].decode()
    check("s3: the Python module opens s3:// (weightfs.open, safe_open) = the local folder", python_module)

    refusals = [
        ("a wrong secret", dict(AWS_SECRET_ACCESS_KEY="wrong-secret"), "s3://models/gg/", "SignatureDoesNotMatch"),
        ("an unknown key id", dict(AWS_ACCESS_KEY_ID="NOSUCHKEY"), "s3://models/gg/", "does not know the access key"),
        ("no such bucket", {}, "s3://nobucket/gg/", "no bucket nobucket"),
        ("an empty prefix", {}, "s3://models/nothing/", "no model files under nothing/"),
        ("no such object", {}, "s3://models/gg/none.gguf", "NoSuchKey"),
        ("a private bucket without credentials", dict(AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY=""),
         "s3://models/gg/", "no AWS credentials were found"),
        ("a key id without its secret", dict(AWS_SECRET_ACCESS_KEY=""), "s3://models/gg/",
         "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not"),
        ("a malformed source", {}, "s3://", "not an S3 source"),
        ("a bad bucket name", {}, "s3://bad%20bucket/x", "not an S3 bucket name"),
        ("a missing profile", dict(AWS_PROFILE="nosuch", AWS_ACCESS_KEY_ID="", AWS_SECRET_ACCESS_KEY=""),
         "s3://models/gg/", "the AWS profile nosuch is in neither"),
    ]
    for what, kw, src, want in refusals:
        def one(kw=kw, src=src, want=want):
            with keys(rgw) as e:
                for k, v in kw.items():
                    if v:
                        os.environ[k] = v
                    else:
                        os.environ.pop(k, None)
                return refused(src, want)
        check("s3: refused with one line: %s" % what, one)

    def changed():
        rem = rgw.rclone_remote()
        with keys(rgw), Mount("s3://models/chg/", opts=["-o", "remote_chunk=64K", "-o", "cache=none"]) as rm:
            newdir = new_dir("chg2-")

            def replace(data):
                with open(os.path.join(newdir, "model.safetensors"), "wb") as f:
                    f.write(data)
                rclone(rgw, "copyto", os.path.join(newdir, "model.safetensors"), rem + "models/chg/model.safetensors")
            first = np.frombuffer(expect_eio_after_change(rm, os.path.join(models["chg"], "model.safetensors"), replace,
                                                          "an object replaced in the store"), dtype=np.float32)
            try:
                with open(rm.path("t00"), "rb") as f:
                    again = np.frombuffer(f.read(), dtype=np.float32)
                if not np.array_equal(first, again):
                    raise Fail("t00 read again gave other bytes")
            except OSError as e:
                if e.errno != 5:
                    raise Fail("t00 again: %s, want its bytes or EIO" % e)
        return "EIO (If-Match refused by the store) and one notice; t00 again its bytes or EIO"
    check("s3: an object replaced in the store under the mount: EIO, never other bytes", changed)
