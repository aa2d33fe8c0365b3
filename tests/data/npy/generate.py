# Regenerates the reference .npy files with NumPy (1.24): /usr/bin/python3 generate.py
# The unit tests read them and check kiln writes the same bytes for the version 1.0 ones.
import numpy as np

ok = {
    "f32_2x3": np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1,
    "f16_3": np.array([1.0, -2.5, 65504.0], dtype="<f2"),
    "f64_scalar": np.array(3.25, dtype="<f8"),
    "i32_4": np.array([1, -2, 3, 2**31 - 1], dtype="<i4"),
    "i64_2x1x3": np.arange(6, dtype="<i8").reshape(2, 1, 3) - 3,
    "i64_0x4": np.zeros((0, 4), dtype="<i8"),
}
for name, a in ok.items():
    np.save(name + ".npy", a)
for version in [(2, 0), (3, 0)]:
    with open("v%d_f32_2x3.npy" % version[0], "wb") as f:
        np.lib.format.write_array(f, ok["f32_2x3"], version=version)

bad = {
    "big_endian": np.arange(3, dtype=">f4"),
    "fortran": np.asfortranarray(ok["f32_2x3"]),
    "u8": np.arange(3, dtype="u1"),
    "bool": np.array([True, False]),
    "structured": np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]),
}
for name, a in bad.items():
    np.save(name + ".npy", a)
