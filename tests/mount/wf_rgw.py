"""Ceph's RADOS Gateway on loopback, for the s3:// tests: a one-node cluster
(a monitor, one OSD on memstore, radosgw's beast frontend) started from
Debian's packages (ceph-mon, ceph-osd, radosgw) in a folder of its own, with
no systemd, no cephx and nothing outside that folder, and stopped in the
order that does not hang (radosgw, the OSD, the monitor).

It checks SigV4 signatures, ETags and If-Match for real, which is why the
s3 tests use it (docs/remote.md, "How it is tested").
"""

import os
import shutil
import signal
import socket
import subprocess
import time
import uuid

from wf_harness import free_port, new_dir

BINS = ("/usr/bin/ceph-mon", "/usr/bin/ceph-osd", "/usr/bin/radosgw", "/usr/bin/radosgw-admin",
        "/usr/bin/monmaptool", "/usr/bin/ceph")


def available():
    return all(os.access(b, os.X_OK) for b in BINS)


CONF = """[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{mon_port}
mon initial members = a
ms bind msgr1 = false
ms bind msgr2 = true
ms mon client mode = crc
auth cluster required = none
auth service required = none
auth client required = none
run dir = {d}/run
crash dir = {d}/crash
log file = {d}/log/$name.log
admin socket = {d}/run/$name.asok
keyring = {d}/keyring
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
paxos propose interval = 0.05
client mount timeout = 60
[mon.a]
mon data = {d}/mon
[osd.0]
osd data = {d}/osd
osd objectstore = memstore
memstore device bytes = {mem}
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw data = {d}/rgw
rgw dns name = 127.0.0.1
rgw max listing results = {max_list}
"""


class Rgw:
    """One-node Ceph with radosgw; .endpoint, .key and .secret once started."""

    def __init__(self, mem=1 << 30, max_list=1000):
        """max_list: keys per listing page at most, whatever a client asks (a small value makes a
        folder of a few files need continuation)."""
        self.dir = new_dir("rgw-")
        self.mon_port, self.rgw_port = free_port(), free_port()
        self.conf = os.path.join(self.dir, "ceph.conf")
        self.procs = {}
        self.key, self.secret = "WFTESTKEY0123456789", "wf-test-secret-0123456789abcdefABCDEF"
        self.endpoint = "http://127.0.0.1:%d" % self.rgw_port
        for sub in ("run", "crash", "log", "mon", "osd", "rgw"):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        with open(self.conf, "w") as f:
            f.write(CONF.format(fsid=uuid.uuid4(), mon_port=self.mon_port, rgw_port=self.rgw_port,
                                d=self.dir, mem=mem, max_list=max_list))
        with open(os.path.join(self.dir, "keyring"), "w"):
            pass

    def _run(self, *args, timeout=60):
        r = subprocess.run(list(args), capture_output=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("%s: rc %d: %s" % (" ".join(args[:3]), r.returncode,
                                                  (r.stderr or r.stdout).decode(errors="replace")[-800:]))
        return r.stdout.decode(errors="replace")

    def _daemon(self, name, *args):
        log = open(os.path.join(self.dir, "log", name + ".out"), "wb")
        self.procs[name] = subprocess.Popen(list(args), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()

    def _wait_port(self, port, deadline, what):
        while time.time() < deadline:
            for name, p in self.procs.items():
                if p.poll() is not None:
                    raise RuntimeError("%s exited (rc %d) while starting: %s" % (name, p.returncode, self.tail(name)))
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("%s did not listen on %d in time: %s" % (what, port, self.tail(what)))

    def tail(self, name):
        out = []
        for p in (os.path.join(self.dir, "log", name + ".out"),):
            try:
                with open(p, "rb") as f:
                    out.append(f.read()[-600:].decode(errors="replace"))
            except OSError:
                pass
        return " | ".join(out)

    def start(self, timeout=120):
        deadline = time.time() + timeout
        c = self.conf
        monmap = os.path.join(self.dir, "monmap")
        self._run("/usr/bin/monmaptool", "-c", c, "--create", "--clobber", "--addv", "a",
                  "[v2:127.0.0.1:%d]" % self.mon_port, "--fsid", self._fsid(), monmap)
        self._run("/usr/bin/ceph-mon", "-c", c, "--mkfs", "-i", "a", "--monmap", monmap)
        self._daemon("mon.a", "/usr/bin/ceph-mon", "-c", c, "-i", "a", "-f")
        self._wait_port(self.mon_port, deadline, "mon.a")
        osd_uuid = str(uuid.uuid4())
        osd_id = self._run("/usr/bin/ceph", "-c", c, "--connect-timeout", "30", "osd", "new", osd_uuid).strip()
        if osd_id != "0":
            raise RuntimeError("ceph osd new gave id %r" % osd_id)
        self._run("/usr/bin/ceph-osd", "-c", c, "-i", "0", "--mkfs", "--osd-uuid", osd_uuid)
        self._daemon("osd.0", "/usr/bin/ceph-osd", "-c", c, "-i", "0", "-f")
        self._daemon("rgw", "/usr/bin/radosgw", "-c", c, "-n", "client.rgw.a", "-f")
        self._wait_port(self.rgw_port, deadline, "rgw")
        self._run("/usr/bin/radosgw-admin", "-c", c, "-n", "client.rgw.a", "user", "create", "--uid=wftest",
                  "--display-name=wftest", "--access-key=" + self.key, "--secret=" + self.secret)
        return self

    def _fsid(self):
        with open(self.conf) as f:
            for line in f:
                if line.startswith("fsid = "):
                    return line.split("=", 1)[1].strip()
        raise RuntimeError("no fsid")

    def stop(self):
        for name in ("rgw", "osd.0", "mon.a"):
            p = self.procs.pop(name, None)
            if p is None:
                continue
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def rclone_remote(self, key=None, secret=None):
        """An rclone on-the-fly S3 remote for this gateway (rclone, a client people use, uploads the test
        objects)."""
        return (":s3,provider=Ceph,env_auth=false,access_key_id=%s,secret_access_key=%s,endpoint='%s',"
                "force_path_style=true,region=us-east-1:" % (key or self.key, secret or self.secret, self.endpoint))

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *a):
        self.stop()
