"""store.sha256_file: a file's identity (table files' sha256), read into one reused buffer."""

import gzip
import hashlib
import io

from ranktrace import store


def test_digest_of_a_file_a_stream_and_a_read_only_stream(tmp_path):
    data = bytes(range(256)) * 9000 + b"tail"          # past the buffer (1 MiB): several reads, a short last one
    plain = tmp_path / "a.log"
    plain.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert store.sha256_file(lambda: open(plain, "rb")) == want
    assert store.sha256_file(lambda: open(plain, "rb"), chunk=4096) == want
    packed = tmp_path / "a.log.gz"
    packed.write_bytes(gzip.compress(data))
    assert store.sha256_file(lambda: gzip.open(packed, "rb")) == want

    class ReadOnly(io.RawIOBase):   # a stream that offers read() only
        def __init__(self):
            self.inner = io.BytesIO(data)

        def read(self, n=-1):
            return self.inner.read(n)

        def __getattribute__(self, name):
            if name == "readinto":
                raise AttributeError(name)
            return super().__getattribute__(name)

    assert store.sha256_file(ReadOnly) == want

    class AbstractReadinto(io.RawIOBase):   # read() only, readinto the base class's (NotImplementedError)
        def __init__(self):
            self.inner = io.BytesIO(data)

        def readable(self):
            return True

        def read(self, n=-1):
            return self.inner.read(n)

    assert store.sha256_file(AbstractReadinto) == want
    assert store.sha256_file(lambda: io.BytesIO(b"")) == hashlib.sha256(b"").hexdigest()
