"""Every benchmark records the CPU's vector extensions (the machines here differ: AMD EPYC with
AVX2, Intel Xeon with AVX-512 and AMX), read from /proc/cpuinfo."""

from textcls import hardware
from textcls.benchmark import system
from textcls.benchmark.report import _simd


def test_machine_info_records_the_simd_flags_of_this_cpu(monkeypatch):
    flags = set(system.cpu_flags())
    info = system.machine_info()
    assert info["cpu_simd"] == [f for f in system.SIMD_FLAGS if f in flags]
    monkeypatch.setattr(system, "cpu_flags", lambda: ["fpu", "avx2", "amx_tile", "avx512f", "amx_bf16"])
    assert system.cpu_simd() == ["avx2", "avx512f", "amx_tile", "amx_bf16"]


def test_the_report_names_the_flags_or_says_they_were_not_recorded():
    assert _simd({"cpu_simd": ["avx2", "fma"]}) == "avx2, fma"
    assert _simd({"cpu_model": "old JSON"}) == "SIMD flags not recorded"


def test_machine_info_names_the_cpu_generation_beside_its_marketing_name(monkeypatch, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 26\nmodel\t\t: 2\n"
                       "model name\t: AMD EPYC\n\nprocessor\t: 1\nmodel name\t: another\n")
    monkeypatch.setattr(hardware, "CPUINFO", cpuinfo)
    info = system.machine_info()
    assert (info["cpu_model"], info["cpu_generation"]) == ("AMD EPYC", "AuthenticAMD family 26 model 2")
    assert _simd({"cpu_generation": info["cpu_generation"], "cpu_simd": ["avx2"]}) == "AuthenticAMD family 26 model 2; avx2"
    cpuinfo.write_text("Processor\t: ARMv7\n")
    assert system.cpu_generation() is None
    monkeypatch.setattr(hardware, "CPUINFO", tmp_path / "absent")
    assert system.cpu_generation() is None
