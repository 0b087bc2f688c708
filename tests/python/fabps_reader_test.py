"""fabps.MasterReader on a real fabps-master and recordio shards made by
fabps-convert-records.

  PYTHONPATH=build/python /usr/bin/python3 -m pytest tests/python/fabps_reader_test.py
"""

import glob
import os
import subprocess
import time

import pytest

import fabps
from pserver_procs import built_binary


@pytest.fixture
def master(tmp_path):
    lines = [f"record {i:04d} " + "x" * (i % 50) for i in range(600)]
    (tmp_path / "in.txt").write_text("\n".join(lines) + "\n")
    data = tmp_path / "data"
    data.mkdir()
    subprocess.run([built_binary("cmd/convert/fabps-convert-records"),
                    str(tmp_path / "in.txt"), "--output-dir", str(data),
                    "--name", "train", "--shards", "3", "--chunk-kib", "1"],
                   check=True, capture_output=True, timeout=60)
    port_file = tmp_path / "port"
    log = open(tmp_path / "master.log", "wb")
    proc = subprocess.Popen([built_binary("master/fabps-master"),
                             "--state-dir", str(tmp_path / "state"),
                             "--port", "0", "--port-file", str(port_file),
                             "--chunks-per-task", "1"],
                            stdout=log, stderr=subprocess.STDOUT)
    end = time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().endswith("\n")):
        assert proc.poll() is None and time.monotonic() < end, \
            (tmp_path / "master.log").read_text()
        time.sleep(0.01)
    yield (f"127.0.0.1:{int(port_file.read_text())}",
           sorted(glob.glob(str(data / "train*"))), lines)
    proc.kill()
    proc.wait(10)
    log.close()


def test_reads_every_record_of_each_pass(master):
    address, files, lines = master
    assert files
    reader = fabps.MasterReader(address=address, trainer_id=7,
                                batch_records=64)
    assert reader.trainer_id == 7
    reader.set_dataset([os.path.join(os.path.dirname(files[0]), "train*")])
    for p in range(2):
        reader.start_pass(p)
        got = [r.decode() for r in reader]
        assert sorted(got) == sorted(lines), f"pass {p}"
    status = reader.status()
    assert status["num_tasks"] > 1, status
    assert status["failed"] == 0 and status["pass"] >= 1, status
    assert reader.request_save_model(1000) is True


def test_unknown_dataset_and_no_master_are_errors(master, tmp_path):
    address, files, _ = master
    reader = fabps.MasterReader(address=address)
    reader.set_dataset([os.path.join(os.path.dirname(files[0]), "train*")])
    with pytest.raises(fabps.Error):
        reader.set_dataset([str(tmp_path / "other-*")])  # first caller won
    gone = fabps.MasterReader(address="127.0.0.1:1", rpc_timeout_ms=200,
                              rpc_retry_ms=300)
    gone.start_pass(0)  # does not wait: the prefetch thread asks
    with pytest.raises(fabps.Unavailable):
        next(iter(gone))


def test_read_records_reads_files_and_refuses_damage(master, tmp_path):
    _, files, lines = master
    got = []
    for f in files:
        got += fabps.read_records(f)
    assert sorted(r.decode() for r in got) == sorted(lines)
    damaged = tmp_path / "damaged"
    data = bytearray(open(files[0], "rb").read())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    with pytest.raises(fabps.Corruption, match="damaged"):
        fabps.read_records(str(damaged))
    with pytest.raises(fabps.NotFound):
        fabps.read_records(str(tmp_path / "missing"))
