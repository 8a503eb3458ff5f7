"""Counting Go and pytest results for the summary line of `invoke test`."""

from harness.toolchain import go_test_counts, pytest_counts


def test_go_test_counts():
    lines = "\n".join([
        '{"Action":"run","Package":"p","Test":"TestA"}',
        '{"Action":"pass","Package":"p","Test":"TestA"}',
        '{"Action":"fail","Package":"p","Test":"TestB"}',
        '{"Action":"fail","Package":"q"}',
        'not json',
    ])
    assert go_test_counts(lines) == (1, 2)


def test_pytest_counts():
    xml = '<testsuites><testsuite tests="5" failures="1" errors="1" skipped="1"/></testsuites>'
    assert pytest_counts(xml) == (2, 2)
