# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.cel: the CEL subset used by DRA device selectors."""

from __future__ import annotations

import pytest

from kubelab import cel

H200 = {
    "name": "gpu-0",
    "attributes": {
        "type": {"string": "gpu"}, "uuid": {"string": "GPU-12345678-aaaa-bbbb-cccc-000000000000"},
        "productName": {"string": "NVIDIA H200"}, "brand": {"string": "Nvidia"}, "architecture": {"string": "Hopper"},
        "cudaComputeCapability": {"version": "9.0.0"}, "driverVersion": {"version": "580.95.5"},
        "resource.kubernetes.io/pciBusID": {"string": "0000:18:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:18"},
        "resource.kubernetes.io/numaNode": {"int": 1},
    },
    "capacity": {"memory": {"value": "143771Mi"}},
}
DEVICE = cel.device_env("gpu.nvidia.com", H200)


@pytest.mark.parametrize("expression, expected", [
    ("device.driver == 'gpu.nvidia.com'", True),
    ("device.driver != 'gpu.nvidia.com'", False),
    ("device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'", True),
    ("device.attributes['gpu.nvidia.com'].type == 'mig'", False),
    ("device.attributes['resource.kubernetes.io'].numaNode == 1", True),
    ("device.attributes['resource.kubernetes.io'].numaNode >= 1 && device.attributes['resource.kubernetes.io'].numaNode < 2",
     True),
    ("device.attributes['resource.kubernetes.io'].numaNode > 1", False),
    ("device.attributes['resource.kubernetes.io'].numaNode <= 0", False),
    ("device.attributes['resource.kubernetes.io'].pciBusID == '0000:18:00.0'", True),
    ("device.attributes['gpu.nvidia.com'].productName.startsWith('NVIDIA H')", True),
    ("device.attributes['gpu.nvidia.com'].productName.endsWith('H100')", False),
    ("device.attributes['gpu.nvidia.com'].productName.contains('H200')", True),
    ("device.attributes['gpu.nvidia.com'].productName.matches('^NVIDIA H[12]00$')", True),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0", True),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('141Gi')) > 0", False),
    ("device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('80Gi'))", True),
    ("device.capacity['gpu.nvidia.com'].memory.isLessThan(quantity('80Gi'))", False),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.compareTo(semver('9.0.0')) == 0", True),
    ("device.attributes['gpu.nvidia.com'].cudaComputeCapability.isGreaterThan(semver('8.0.0'))", True),
    ("device.attributes['gpu.nvidia.com'].driverVersion.major() == 580", True),
    ("!(device.attributes['gpu.nvidia.com'].type == 'gpu')", False),
    ("!false || false", True),
    ("(true || false) && !(1 == 2)", True),
    ("device.attributes['gpu.nvidia.com'].architecture in ['Hopper', 'Blackwell']", True),
    ("'vfio' in ['gpu', 'mig']", False),
    ("'numaNode' in device.attributes['resource.kubernetes.io']", True),
    ("has(device.attributes['gpu.nvidia.com'].uuid)", True),
    ("has(device.attributes['gpu.nvidia.com'].parentUUID)", False),
    ("has(device.attributes['dra.example.com'].anything)", False),  # an unknown domain is an empty map
    ("size(device.attributes['gpu.nvidia.com'].brand) == 6", True),
    ("1 + 2 == 3 && 'a' + \"b\" == 'ab' && -1 < 0 && 2.5 > 2", True),
    ("1 == 'one'", False),  # heterogeneous equality is false, not an error
    ("true == true && null == null", True),
])
def test_expressions(expression, expected):
    assert cel.device_matches(expression, DEVICE) is expected


@pytest.mark.parametrize("expression, fragment", [
    ("device.attributes['gpu.nvidia.com'].x == 1 ? true : false", "unsupported construct at column"),
    ("device.attributes['gpu.nvidia.com'].all(x, true)", "unsupported method at column 37: .all()"),
    ("matches(device.driver, 'x')", "unsupported function at column 1: matches()"),
    ("2 * 3 == 6", "the '*' operator"),
    ("{'a': 1}['a'] == 1", "map literals"),
    ("device.driver ==", "unexpected end of expression"),
    ("(device.driver == 'x'", "expected ')'"),
    ("device.driver == 'x' device", "unexpected 'device'"),
    ("device.driver @ 'x'", "unexpected '@'"),
    ("has(device)", "has() needs one field selection"),
    ("", "empty expression"),
])
def test_compile_errors(expression, fragment):
    with pytest.raises(cel.CelError) as info:
        cel.device_matches(expression, DEVICE)
    assert not isinstance(info.value, cel.CelEvalError)
    assert str(info.value).startswith("CEL") and fragment in str(info.value)


@pytest.mark.parametrize("expression, fragment", [
    ("device.attributes['gpu.nvidia.com'].missing == 1", "no such key: missing"),
    ("device.attributes['gpu.nvidia.com'].type < 1", "no such overload: string < int"),
    ("device.driver", "returned string, not bool"),
    ("other == 1", "undeclared reference to 'other'"),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('lots')) > 0", "invalid quantity"),
    ("device.capacity['gpu.nvidia.com'].memory.compareTo(1) > 0", "no such overload"),
    ("device.driver.startsWith(1)", "no such overload"),
    ("!device.driver", "no such overload"),
])
def test_runtime_errors(expression, fragment):
    with pytest.raises(cel.CelEvalError) as info:
        cel.device_matches(expression, DEVICE)
    assert str(info.value).startswith("CEL runtime error") and fragment in str(info.value)


def test_logical_operators_absorb_errors():
    missing = "device.attributes['gpu.nvidia.com'].missing == 1"
    assert cel.device_matches("false && " + missing, DEVICE) is False
    assert cel.device_matches(missing + " && false", DEVICE) is False
    assert cel.device_matches("true || " + missing, DEVICE) is True
    assert cel.device_matches(missing + " || true", DEVICE) is True
    with pytest.raises(cel.CelEvalError):
        cel.device_matches("true && " + missing, DEVICE)


def test_device_env_and_values():
    assert DEVICE["driver"] == "gpu.nvidia.com"
    assert DEVICE["attributes"]["resource.kubernetes.io"]["numaNode"] == 1
    assert DEVICE["attributes"]["nothing.example.com"] == {}
    assert DEVICE["capacity"]["gpu.nvidia.com"]["memory"].value == 143771 * 2 ** 20
    assert cel.parse_quantity("500m").value == 0.5 and cel.parse_quantity("1e3").value == 1000
    assert cel.parse_semver("1.2.3-rc.1").compare(cel.parse_semver("1.2.3")) < 0
    assert cel.compile_expression("1 == 1") is cel.compile_expression("1 == 1")  # cached


def test_escapes_and_literals():
    assert cel.compile_expression(r"'it\'s' == " + '"it\'s"').evaluate({}) is True
    assert cel.compile_expression("0x10 == 16 && [1, 2][1] == 2 && size([]) == 0").evaluate({}) is True
    with pytest.raises(cel.CelEvalError, match="index out of range"):
        cel.compile_expression("[1][3] == 1").evaluate({})
