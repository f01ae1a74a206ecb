"""The per-device tuning table: plain calls use it, calls with a profile or tunables keep their own values."""

from types import SimpleNamespace

from conformance import BASELINE, load_kernel
from conformance.gpu import tuning


def test_plain_calls_use_the_device_table_and_explicit_calls_do_not(device, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    tuning._load.cache_clear()
    best = [{"package": "com.microsoft.Gelu", "dtype": "float32", "variant": "vec4", "WORKGROUP_SIZE": 64}]
    path = tuning.write(SimpleNamespace(summary=device.summary), best)
    assert path.parent == tmp_path / "webgpu-kernel-conformance" / "tuning"  # the user's cache, not the package
    assert path.name == f"{tuning.device_key(device.summary)}.json"
    kernel = load_kernel("com.microsoft.Gelu", device=device, version=1)
    assert kernel.plan(X=((8,), "float32")).passes[0].dispatch.workgroup_size == 64
    gelu2 = load_kernel("com.microsoft.Gelu", device=device, version=2)  # the v1 row is not version 2's
    assert gelu2.plan(X=((8,), "float32")).passes[0].dispatch.workgroup_size == 256
    assert kernel.plan(X=((8,), "float16")).passes[0].dispatch.workgroup_size == 256  # no entry: default
    assert kernel.plan(X=((6,), "float32")).passes[0].dispatch.workgroup_size == 256  # other variant
    assert kernel.plan(BASELINE, X=((8,), "float32")).passes[0].dispatch.workgroup_size == 256
    assert kernel.plan(tunables={"WORKGROUP_SIZE": 128}, X=((8,), "float32")).passes[0].dispatch.workgroup_size == 128
    tuning._load.cache_clear()


def test_the_sweep_keeps_the_manifest_default_unless_another_size_is_clearly_faster():
    from conformance.tools.bench import choose

    assert choose({128: 4113.1, 256: 4111.0, 512: 4100.0}, 256) == 256  # 0.05 % apart: noise
    assert choose({128: 2447.0, 256: 3417.0, 512: 3309.0}, 256) == 256
    assert choose({128: 4160.0, 256: 3900.0}, 256) == 128  # 6.7 % faster: tuned
    assert choose({64: 10.0, 128: 12.0}, 256) == 128  # default not swept (device cap)


def test_a_table_goes_where_the_user_names_and_the_installed_package_stays_untouched(device, tmp_path):
    shipped = sorted(p.name for p in tuning.SHIPPED.iterdir())
    best = [{"package": "com.microsoft.Gelu", "dtype": "float32", "variant": "vec4", "WORKGROUP_SIZE": 64}]
    path = tuning.write(SimpleNamespace(summary=device.summary), best, tmp_path / "mine")
    assert path.parent == tmp_path / "mine" and path.is_file()
    assert sorted(p.name for p in tuning.SHIPPED.iterdir()) == shipped
