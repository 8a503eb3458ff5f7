"""Counting Go and pytest results for the summary line of `invoke test`."""

from harness.toolchain import go_test_counts, go_test_skips, pytest_counts, pytest_skips


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


def test_skips_are_counted_by_reason():
    xml = ('<testsuites><testsuite tests="3" skipped="3">'
           '<testcase name="a"><skipped message="no seed texts at ../shared/seeds">f.py:1: x</skipped></testcase>'
           '<testcase name="b"><skipped message="no seed texts at ../shared/seeds">f.py:2: x</skipped></testcase>'
           '<testcase name="c"><skipped message="needs root"/></testcase><testcase name="d"/>'
           '</testsuite></testsuites>')
    assert pytest_skips(xml) == {"no seed texts at ../shared/seeds": 2, "needs root": 1}
    lines = "\n".join([
        '{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\\n"}',
        '{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:12: no upstream snapshot\\n"}',
        '{"Action":"output","Package":"p","Test":"TestA","Output":"--- SKIP: TestA (0.00s)\\n"}',
        '{"Action":"skip","Package":"p","Test":"TestA"}',
        '{"Action":"pass","Package":"p","Test":"TestB"}',
    ])
    assert go_test_skips(lines) == {"no upstream snapshot": 1}
