"""The data channel: every answer crosses as JSON that decodes to plain data only, and
anything outside the format is refused (encode) or rejected (decode), never unpickled."""

import json
import math
from fractions import Fraction

import numpy as np
import pytest

from attnlib.selfcheck import wire
from attnlib.selfcheck.run import call_cases
from tests.checker_cases import random_qkv


def roundtrip(value):
    return wire.decode(wire.encode(value))


def test_arrays_numbers_strings_and_containers_come_back_equal():
    Q, K, V = random_qkv(0)
    back = roundtrip((Q, [K, "flatter"], {"V": V}, 3, 2.5, None, True, ...))
    assert isinstance(back, tuple) and isinstance(back[1], list) and isinstance(back[2], dict)
    np.testing.assert_array_equal(back[0], Q)
    assert back[0].dtype == np.float64 and back[0].shape == (3, 4)
    np.testing.assert_array_equal(back[2]["V"], V)
    assert back[1][1] == "flatter" and back[3:] == (3, 2.5, None, True, ...)


def test_dtypes_shapes_and_non_finite_values_survive():
    for array in [
        np.array([[np.nan, np.inf], [-np.inf, -0.0]]),
        np.arange(6, dtype=np.int32).reshape(2, 3, 1),
        np.array([[True, False]]),
        np.zeros((0, 3)),
        np.float64(7.0),
    ]:
        back = roundtrip(array)
        assert np.shape(back) == np.shape(array)
        np.testing.assert_array_equal(back, array)
    assert math.isnan(roundtrip(float("nan"))) and roundtrip(-math.inf) == -math.inf
    assert roundtrip(np.float32(1.5)) == 1.5 and roundtrip(np.int64(3)) == 3


def test_numbers_that_are_objects_become_float_arrays():
    back = roundtrip(np.array([Fraction(1, 2), 2], dtype=object))
    np.testing.assert_array_equal(back, [0.5, 2.0])


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (np.ma.masked_array([1.0, 2.0], mask=[True, False]), "mask="),
        (np.array([object()]), "not a grid of numbers"),
        (np.array([1 + 1j]), "complex"),
        (np.array(["a"]), "array of <U1"),
        (len, "is a function"),
        ({1, 2}, "is a set"),
        ({1: 2}, "keys are not all strings"),
        (object(), "is an object"),
    ],
)
def test_what_is_not_data_is_refused_with_a_reason(value, says):
    back = roundtrip(value)
    assert isinstance(back, wire.Refused)
    assert says in back.reason and "\n" not in back.reason


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "[1, Infinity]",
        '{"x": 1}',
        '{"array": [1], "dtype": "object", "shape": [1]}',
        '{"array": [1, 2], "dtype": "float64", "shape": [3]}',
        '{"array": ["nan?"], "dtype": "float64", "shape": [1]}',
        '{"array": [1.5], "dtype": "int64", "shape": [1]}',
        '{"array": [1], "dtype": "float64", "shape": [-1]}',
        '{"tuple": 3}',
        '{"ellipsis": false}',
        '{"py/object": "os.system"}',
        "[" * 100 + "]" * 100,
        "",
        b"\x80\x04\x95",  # a pickle's first bytes
        12,
    ],
)
def test_decode_rejects_everything_outside_the_format(text):
    with pytest.raises(ValueError, match="wire.decode"):
        wire.decode(text)


def test_the_text_is_plain_json():
    text = wire.encode((np.array([1.0, np.nan]), ...))
    assert json.loads(text) == {
        "tuple": [
            {"array": [1.0, "nan"], "dtype": "float64", "shape": [2]},
            {"ellipsis": True},
        ]
    }


def test_call_cases_returns_one_record_per_case():
    Q, K, V = random_qkv(1)

    def attention_or_fail(Q, K, V):
        if Q.shape[0] == 1:
            raise ValueError("one query")
        return Q @ K.T @ V

    records = call_cases(attention_or_fail, [(Q, K, V), (Q[:1], K, V)])
    np.testing.assert_allclose(records[0]["ok"], Q @ K.T @ V)
    assert records[1] == {"error": "ValueError: one query"}


def test_call_cases_reports_exit_and_timeout_and_skips_the_rest():
    assert call_cases(lambda: exit(4), [(), ()]) == [{"exit": 4}, {"exit": 4}]
    records = call_cases(lambda: __import__("os")._exit(5), [(), ()])
    assert records[0] == {"exit": 5} and records[1]["error"].startswith("not run")
    records = call_cases(lambda: __import__("time").sleep(30), [(), ()], seconds=0.2)
    assert records[0] == {"timeout": 0.2} and records[1]["error"].startswith("not run")
