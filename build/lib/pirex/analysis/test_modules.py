"""Every experiment's analysis module offers the interface (interface.Analysis), checked when it is loaded."""

from types import SimpleNamespace

import pytest

from pirex.analysis import interface, modules
from pirex.core import experiment
from pirex.core.errors import PirexError


@pytest.mark.parametrize("exp_id", experiment.available())
def test_every_experiment_loads_its_analysis_module(exp_id):
    exp = experiment.load(exp_id)
    mod = modules.module(exp)
    assert interface.missing(mod) == [] and mod.__name__ == f"pirex.analysis.{exp.analysis}"


def test_a_module_lacking_a_member_is_refused_by_name(monkeypatch):
    from pirex.analysis import generic

    monkeypatch.delattr(generic, "run_values")
    monkeypatch.setattr(generic, "VIEWS", None)
    with pytest.raises(PirexError, match=r"pirex/analysis/generic.py lacks VIEWS, run_values of the analysis"):
        modules.module(SimpleNamespace(id="x", analysis="generic"))
