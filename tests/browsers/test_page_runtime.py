"""The one page runtime (``page_runtime.js``) under both transports: read-backs mapped ahead stay correct.

When one read-back buffer is mapped, the page maps the device's other read-back buffers ahead (Firefox resolves
mappings on a timer: one round of it for all). A buffer mapped ahead and then written again by a later submit must
be unmapped before that submit (else WebGPU refuses the submit) and read back the new bytes.
"""

from __future__ import annotations

import pytest

from conformance.gpu.device import devices

MAP_READ, COPY_SRC, COPY_DST, STORAGE = 1, 4, 8, 128


@pytest.mark.parametrize("webgpu", ["chromium", "firefox"])
def test_read_backs_mapped_ahead_read_what_the_last_submit_wrote(webgpu):
    dev = devices.get("auto", None, webgpu).device
    src = dev.create_buffer_with_data(data=bytes(range(16)), usage=STORAGE | COPY_SRC | COPY_DST)
    later = dev.create_buffer_with_data(data=bytes(range(16, 32)), usage=STORAGE | COPY_SRC)
    backs = [dev.create_buffer(size=16, usage=MAP_READ | COPY_DST) for _ in range(3)]
    encoder = dev.create_command_encoder()
    for back in backs:
        encoder.copy_buffer_to_buffer(src, 0, back, 0, 16)
    dev.queue.submit([encoder.finish()])

    def read(buffer) -> bytes:
        buffer.map_sync(1)
        data = bytes(buffer.read_mapped())
        buffer.unmap()
        return data

    assert read(backs[0]) == bytes(range(16))  # backs[1] and backs[2] start mapping ahead here
    encoder = dev.create_command_encoder()
    encoder.copy_buffer_to_buffer(later, 0, backs[1], 0, 16)
    dev.queue.submit([encoder.finish()])  # backs[1] is unmapped first, or this submit is refused
    assert read(backs[1]) == bytes(range(16, 32))
    assert read(backs[2]) == bytes(range(16))
    for buffer in (src, later, *backs):
        buffer.destroy()
    dev.queue.on_submitted_work_done_sync()  # no error of the mappings ahead reached the batch
