"""The rules of `dlbridge check` (`dlbridge.check.rules`): every rule cites the public texts
and carries a one-line fix, `follows` is a graph without cycles, `attach_causes` puts each
finding under its root, `explain` and `list_rules` say it in words; and the rule
`consumer.renames-capsule`, which a consumer that never renames its capsules fails, with every
failure that follows from it beneath it."""

from __future__ import annotations

import gc
import random
import re

import numpy as np
import pytest

import _check_subjects as S
from dlbridge.check import consumer_checks, device_checks, exchange_checks, producer_checks, rules
from dlbridge.check.abi import NAME_LEGACY, NAME_USED_LEGACY, NAME_USED_VERSIONED
from dlbridge.check.capi import PyCapsule_SetName, static_name
from dlbridge.check.capsules import capsule_name
from dlbridge.check.fake_producers import NegotiatingProducer, OneTensorProducer, capsule_names
from dlbridge.check.frameworks import FRAMEWORKS, Framework
from dlbridge.check.records import make_managed
from dlbridge.check.rules import (
    ARRAY_API,
    FAMILIES,
    FINDINGS,
    HEADER,
    MUST,
    PYTHON_SPEC,
    RULES,
    SHOULD,
    SOURCES,
    SYMPTOMS,
    Citation,
    Rule,
    attach_causes,
    explain,
    followers,
    list_rules,
)

RENAMES = "consumer.renames-capsule"

#: The sections of DLPack's Python specification a citation may point at (their anchors).
PYTHON_SPEC_ANCHORS = {
    "#syntax-for-data-interchange-with-dlpack",
    "#semantics",
    "#implementation",
    "#dlpack-c-exchange-api",
}


# ---- the rules themselves ----------------------------------------------------------------------


def test_every_rule_cites_the_public_texts_only():
    for rule in RULES.values():
        assert rule.cites, f"{rule.id} cites nothing"
        for cite in rule.cites:
            assert isinstance(cite, Citation)
            assert cite.document in (ARRAY_API, PYTHON_SPEC, HEADER), (rule.id, cite)
            assert cite.url.startswith(SOURCES), (rule.id, cite.url)
            assert cite.section.strip(), (rule.id, cite)
            if cite.document == HEADER:
                assert cite.url == SOURCES[3], (rule.id, cite.url)
            elif cite.document == PYTHON_SPEC:
                assert cite.url.startswith(SOURCES[2] + "#"), (rule.id, cite.url)
                assert cite.url[len(SOURCES[2]) :] in PYTHON_SPEC_ANCHORS, (rule.id, cite.url)
            else:
                assert cite.url.startswith(SOURCES[:2]), (rule.id, cite.url)


def test_the_four_sources_are_the_public_texts():
    assert SOURCES == (
        "https://data-apis.org/array-api/latest/API_specification/",
        "https://data-apis.org/array-api/latest/design_topics/",
        "https://dmlc.github.io/dlpack/latest/python_spec.html",
        "https://github.com/dmlc/dlpack/blob/main/include/dlpack/dlpack.h",
    )
    cited = {cite.url.split("#")[0] for rule in RULES.values() for cite in rule.cites}
    for page in (
        "array_api.array.__dlpack__.html",
        "array_api.array.__dlpack_device__.html",
        "array_api.from_dlpack.html",
        "design_topics/data_interchange.html",
    ):
        assert any(url.endswith(page) for url in cited), page
    # The exchange rules cite the Python specification's C exchange section, or dlpack.h.
    for rule in RULES.values():
        if rule.id.startswith("exchange."):
            assert any(
                c.document == HEADER or c.url.endswith("#dlpack-c-exchange-api") for c in rule.cites
            ), rule.id


def test_no_rule_cites_the_private_checklist():
    numbered = re.compile(r"\bprotocol\s*\d")
    for rule in RULES.values():
        shown = " ".join([rule.section, rule.text, rule.hint, *map(repr, rule.cites)]).lower()
        assert not numbered.search(shown), (rule.id, shown)
        assert "python-protocol" not in shown and "checklist" not in shown, rule.id
    assert "python-protocol" not in rules.__doc__
    assert not numbered.search(rules.__doc__)


def test_sections_are_short_labels_built_from_the_citations():
    rule = Rule(
        "producer.example",
        MUST,
        "an example",
        (
            Citation(ARRAY_API, "array.__dlpack__ (copy)", SOURCES[0]),
            Citation(HEADER, "DLTensor::strides", SOURCES[3]),
            Citation(ARRAY_API, "array.__dlpack__ (Notes)", SOURCES[0]),
        ),
        "Do it",
    )
    assert rule.section == "array API: array.__dlpack__; dlpack.h: DLTensor::strides"
    assert rule.family == "producer"
    assert RULES["producer.strides-present"].section == "dlpack.h: DLTensor::strides"
    for rule in RULES.values():
        assert "(" not in rule.section and rule.section, rule.id


def test_every_rule_has_a_one_line_hint():
    for rule in RULES.values():
        assert rule.hint and "\n" not in rule.hint, rule.id
        assert len(rule.hint) < 160, (rule.id, len(rule.hint))
        assert rule.hint[0].isupper() and not rule.hint.endswith("."), (rule.id, rule.hint)
    assert RULES[RENAMES].hint.startswith("Rename the capsule to used_dltensor")


def test_levels_families_and_order():
    assert {rule.level for rule in RULES.values()} == {MUST, SHOULD}
    assert {rule.family for rule in RULES.values()} == set(FAMILIES)
    ids = list(RULES)
    assert ids.index(RENAMES) == ids.index("consumer.legacy-capsule") + 1
    assert RULES[RENAMES].level == MUST
    checks = {
        **producer_checks.CHECKS,
        **exchange_checks.CHECKS,
        **device_checks.CHECKS,
        **consumer_checks.CHECKS,
    }
    assert set(checks) == set(RULES)
    assert list(consumer_checks.CHECKS) == [r for r in RULES if r.startswith("consumer.")]


def test_follows_names_known_rules_without_cycles():
    for rule in RULES.values():
        assert len(set(rule.follows)) == len(rule.follows), rule.id
        for root in rule.follows:
            assert root in RULES and root != rule.id, (rule.id, root)
    rules._check_follows(RULES)  # the module checks it when imported, too
    # Depth-first: no rule reaches itself through follows.
    for start in RULES:
        seen, todo = set(), list(RULES[start].follows)
        while todo:
            rule_id = todo.pop()
            assert rule_id != start, f"{start} follows itself"
            if rule_id not in seen:
                seen.add(rule_id)
                todo.extend(RULES[rule_id].follows)


def test_a_cycle_or_an_unknown_root_is_refused():
    def rule(rule_id, *follows):
        return Rule(rule_id, MUST, "t", (), "Fix", follows)

    cycle = {r.id: r for r in (rule("c.a", "c.b"), rule("c.b", "c.c"), rule("c.c", "c.a"))}
    with pytest.raises(ValueError, match="cycle"):
        rules._check_follows(cycle)
    with pytest.raises(ValueError, match="no rule"):
        rules._check_follows({"c.a": rule("c.a", "c.unknown")})


def test_the_causes_found_by_experiment():
    # What the cascade experiments showed (see the rules' follows): the roots named here.
    assert followers(RENAMES) == [
        "consumer.legacy-capsule",
        "consumer.deleter-once",
        "consumer.null-strides",
        "consumer.extent-one-strides",
        "consumer.negative-strides",
        "consumer.zero-size-null-data",
        "consumer.byte-offset",
        "consumer.major-version-2",
    ]
    assert set(followers("producer.strides-present")) == {
        "producer.zero-size",
        "producer.values",
        "producer.consumed-once",
        "exchange.from-py-object",
        "exchange.dltensor",
    }
    assert set(followers("exchange.members")) == {
        "exchange.from-py-object",
        "exchange.to-py-object",
        "exchange.allocator",
        "exchange.work-stream",
        "exchange.work-stream-cuda",
    }


# ---- attach_causes -----------------------------------------------------------------------------


#: A planted finding's evidence, showing every root's symptom (`SYMPTOMS`): what follows from
#: a root is then decided by `follows` alone.
EVERY_SYMPTOM = "planted: deleters ran [2] times; a legacy capsule; NULL strides"


def _result(rule_id, outcome="fail", detail=EVERY_SYMPTOM, **extra):
    return {"rule": rule_id, "outcome": outcome, "detail": detail, **extra}


def test_a_finding_without_the_symptom_of_its_root_is_a_root_of_its_own():
    # A consumer that keeps the capsule's name and also reads byte_offset wrong: the wrong
    # values are not the rename's doing.
    results = [
        _result(RENAMES, detail="the capsule still named 'dltensor'"),
        _result("consumer.deleter-once", detail="deleters ran [2] times"),
        _result("consumer.byte-offset", detail="byte_offset 8: read [[0.0]], expected [[2.0]]"),
    ]
    attach_causes(results)
    assert [r.get("caused_by") for r in results] == [None, RENAMES, None]
    assert set(SYMPTOMS) <= set(RULES)


def test_causes_are_attached_to_findings_only():
    results = [
        _result(RENAMES),
        _result("consumer.deleter-once"),
        _result("consumer.byte-offset"),
        _result("consumer.null-strides", "error"),  # a check that broke: a finding
        _result("consumer.negative-strides", "pass"),
        _result("consumer.extent-one-strides", "n/a", caused_by=RENAMES),  # stale: removed
        _result("consumer.read-only"),
    ]
    attach_causes(results)
    causes = {r["rule"]: r.get("caused_by") for r in results}
    assert causes == {
        RENAMES: None,
        "consumer.deleter-once": RENAMES,
        "consumer.byte-offset": RENAMES,
        "consumer.null-strides": RENAMES,
        "consumer.negative-strides": None,
        "consumer.extent-one-strides": None,
        "consumer.read-only": None,
    }
    assert "caused_by" not in results[4] and "caused_by" not in results[5]


def test_a_cause_is_the_first_finding_in_follows_order_up_to_its_root():
    # Renaming fine, deleter counts wrong: byte-offset follows deleter-once.
    results = [_result("consumer.deleter-once"), _result("consumer.byte-offset")]
    attach_causes(results)
    assert results[1]["caused_by"] == "consumer.deleter-once"
    # Both capsule kinds refused: the first in follows order is the cause.
    results = [
        _result("consumer.versioned-capsule"),
        _result("consumer.legacy-capsule"),
        _result("consumer.byte-offset"),
    ]
    attach_causes(results)
    assert results[2]["caused_by"] == "consumer.versioned-capsule"
    assert "caused_by" not in results[0] and "caused_by" not in results[1]
    # A chain: legacy-re-export follows legacy-read-only, which follows read-only.
    results = [
        _result("consumer.legacy-re-export"),
        _result("consumer.legacy-read-only"),
        _result("consumer.read-only"),
    ]
    attach_causes(results)
    assert [r.get("caused_by") for r in results] == [
        "consumer.read-only",
        "consumer.read-only",
        None,
    ]
    # Crashes and hangs are findings, and causes, too.
    results = [_result("producer.strides-present", "crash"), _result("producer.values", "hang")]
    attach_causes(results)
    assert results[1]["caused_by"] == "producer.strides-present"


def test_results_of_unknown_rules_are_left_alone():
    results = [_result("consumer.gone", caused_by="x"), _result(RENAMES)]
    attach_causes(results)
    assert results[0]["caused_by"] == "x" and "caused_by" not in results[1]


def test_causes_never_form_a_cycle_even_for_planted_cyclic_rules():
    def rule(rule_id, *follows):
        return Rule(rule_id, MUST, "t", (), "Fix", follows)

    planted = {
        r.id: r
        for r in (
            rule("p.a", "p.b"),
            rule("p.b", "p.a"),
            rule("p.c", "p.a"),
            rule("p.d", "p.c", "p.b"),
            rule("p.e"),
        )
    }
    results = [_result(rule_id) for rule_id in planted]
    attach_causes(results, planted)
    causes = {r["rule"]: r.get("caused_by") for r in results}
    assert causes["p.a"] is None and causes["p.b"] is None  # each on the cycle is a root
    assert causes["p.c"] == "p.b" and causes["p.d"] == "p.b" and causes["p.e"] is None
    for result in results:
        if result.get("caused_by"):
            assert causes[result["caused_by"]] is None


def test_every_cause_is_a_root_finding_reached_through_follows():
    draw = random.Random(20260511)
    for _ in range(300):
        results = [
            _result(rule_id, draw.choice([*FINDINGS, "pass", "n/a", "fail", "fail"]))
            for rule_id in RULES
            if draw.random() < 0.6
        ]
        attach_causes(results)
        outcome = {r["rule"]: r["outcome"] for r in results}
        cause = {r["rule"]: r.get("caused_by") for r in results}
        for result in results:
            root = result.get("caused_by")
            if root is None:
                continue
            assert result["outcome"] in FINDINGS and outcome[root] in FINDINGS
            assert cause[root] is None, (result["rule"], root, cause[root])
            # Reached from the rule through rules that are findings.
            step = result["rule"]
            while step != root:
                step = next(r for r in RULES[step].follows if outcome.get(r) in FINDINGS)
        for result in results:  # a finding with a finding to follow always gets a cause
            if result["outcome"] in FINDINGS and any(
                outcome.get(r) in FINDINGS for r in RULES[result["rule"]].follows
            ):
                assert result.get("caused_by"), result


# ---- explain and list_rules ----------------------------------------------------------------


def test_explain_gives_the_whole_rule():
    rule = RULES["consumer.byte-offset"]
    text = explain(rule.id)
    assert text.splitlines()[0] == "consumer.byte-offset: MUST (consumer rule)"
    assert " ".join(text.split()).count(" ".join(rule.text.split())) == 1
    for cite in rule.cites:
        assert cite.url in text and cite.section in text and cite.document in text
    assert " ".join(rule.hint.split()) in " ".join(text.split())
    for root in rule.follows:
        assert f"  - {root} (" in text
    text = explain(RENAMES)
    assert "Follows from no other rule." in text
    for follower in followers(RENAMES):
        assert f"  - {follower} (MUST)" in text
    for rule_id in RULES:
        assert explain(rule_id).startswith(f"{rule_id}: ")


def test_explain_names_the_nearest_rules_for_an_unknown_id():
    with pytest.raises(KeyError) as raised:
        explain("consumer.rename-capsule")
    message = raised.value.args[0]
    assert "no rule 'consumer.rename-capsule'" in message
    assert "consumer.renames-capsule" in message and "--list-rules" in message
    with pytest.raises(KeyError, match=r"consumer\.null-strides"):
        explain("null-strides")
    with pytest.raises(KeyError, match="no rule 'zzz'"):
        explain("zzz")


def test_list_rules_lists_every_rule_once_by_family():
    text = list_rules()
    lines = text.splitlines()
    assert all(len(line) <= 100 for line in lines), max(lines, key=len)
    headers = [line for line in lines if line and not line.startswith(" ")]
    assert headers == [
        f"{family} rules ({sum(r.family == family for r in RULES.values())})" for family in FAMILIES
    ]
    listed = [line.split()[0] for line in lines if line.startswith("  ")]
    assert sorted(listed) == sorted(RULES)
    family_of_line = None
    for line in lines:
        if line and not line.startswith(" "):
            family_of_line = line.split()[0]
        elif line:
            rule_id, level = line.split()[:2]
            assert RULES[rule_id].family == family_of_line and level == RULES[rule_id].level


# ---- consumer.renames-capsule --------------------------------------------------------------


def _consumer(consume) -> Framework:
    return Framework(
        "ctypes-consumer",
        "numpy",
        make=np.array,
        consume=consume,
        to_numpy=np.asarray,
        read_only=lambda result: not result.flags.writeable,
    )


def _renaming_only(kind: bytes):
    """A consumer that renames only capsules named `kind`, and leaves the others' names."""

    def consume(obj):
        capsule = obj.__dlpack__(max_version=(1, 3))

        class Again:  # hands the same capsule on
            def __dlpack_device__(self):
                return (1, 0)

            def __dlpack__(self, **kwargs):
                return capsule

        rename = capsule_name(capsule) == kind
        return S.capsule_consumer(rename=rename)(Again())

    return consume


def _wrong_name(obj):
    """A consumer that renames every capsule `used_dltensor`, the versioned ones too."""
    capsule = obj.__dlpack__(max_version=(1, 3))
    PyCapsule_SetName(capsule, static_name(NAME_USED_LEGACY))
    return np.zeros((2, 3), np.float32)  # (never releases the tensor: not what is checked)


def test_a_consumer_that_never_renames_is_reported_for_both_capsule_kinds():
    outcome, detail = consumer_checks.renames_capsule(_consumer(S.capsule_consumer(rename=False)))
    assert outcome == "fail", detail
    assert "legacy capsule: imported, and the capsule still named 'dltensor'" in detail, detail
    assert "versioned capsule: imported, and the capsule still named 'dltensor_versioned'" in (
        detail
    )


def test_a_consumer_renaming_one_kind_only_is_reported_for_the_other():
    outcome, detail = consumer_checks.renames_capsule(_consumer(_renaming_only(NAME_LEGACY)))
    assert outcome == "fail", detail
    assert "legacy capsule" not in detail and "versioned capsule: imported" in detail, detail
    outcome, detail = consumer_checks.renames_capsule(_consumer(_wrong_name))
    assert outcome == "fail", detail
    assert "versioned capsule: renamed 'used_dltensor', not 'used_dltensor_versioned'" in detail


def test_a_renaming_consumer_passes_and_every_tensor_is_released_once(monkeypatch):
    seen = []

    class Seen(OneTensorProducer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self)

    monkeypatch.setattr(consumer_checks, "OneTensorProducer", Seen)
    outcome, detail = consumer_checks.renames_capsule(_consumer(S.capsule_consumer()))
    assert outcome == "pass", detail
    assert detail == (
        "legacy capsule: renamed used_dltensor; versioned capsule: renamed used_dltensor_versioned"
    )
    gc.collect()
    assert [p.record.deleter_calls for p in seen] == [1]
    assert all(not p.capsules for p in seen)  # the capsules kept were let go


@pytest.mark.parametrize("name", ["dlbridge", "numpy"])
def test_dlbridge_and_numpy_rename_the_capsules_they_import(name):
    outcome, detail = consumer_checks.CHECKS[RENAMES](FRAMEWORKS[name])
    assert outcome == "pass", detail
    assert "renamed used_dltensor;" in detail and "renamed used_dltensor_versioned" in detail


def test_a_consumer_that_imports_nothing_is_not_applicable():
    def refusing(obj):
        raise BufferError("imports nothing")

    outcome, detail = consumer_checks.renames_capsule(_consumer(refusing))
    assert outcome == "n/a" and detail.startswith("nothing imported"), detail


def test_producers_keep_their_capsules_only_when_asked():
    record = make_managed((2, 3), versioned=False)
    plain = OneTensorProducer(record)
    plain.__dlpack__()
    assert plain.capsules == []
    keeping = NegotiatingProducer(lambda v: make_managed((2, 3), versioned=v), keep_capsules=True)
    capsule = keeping.__dlpack__(max_version=(1, 3))
    PyCapsule_SetName(capsule, static_name(NAME_USED_VERSIONED))
    keeping.__dlpack__()
    assert capsule_names(keeping) == [NAME_USED_VERSIONED, NAME_LEGACY]
    assert keeping.capsule_names() == capsule_names(keeping)
    del capsule
    keeping.capsules.clear()
    # The renamed one is the consumer's (not released here); the other one's destructor ran.
    assert keeping.deleter_calls() == [0, 1]


# ---- the cascade, end to end ---------------------------------------------------------------


def _all_consumer_checks(framework: Framework) -> list:
    results = []
    for rule_id, check in consumer_checks.CHECKS.items():
        outcome, detail = check(framework)
        gc.collect()
        results.append({"rule": rule_id, "outcome": outcome, "detail": detail})
    return results


def test_a_consumer_that_never_renames_has_one_root_and_eight_consequences():
    results = _all_consumer_checks(_consumer(S.capsule_consumer(rename=False)))
    attach_causes(results)
    findings = [r for r in results if r["outcome"] in FINDINGS]
    roots = [r["rule"] for r in findings if not r.get("caused_by")]
    assert roots == [RENAMES], findings
    caused = sorted(r["rule"] for r in findings if r.get("caused_by") == RENAMES)
    assert caused == sorted(followers(RENAMES)), findings
    for result in findings:
        if result["rule"] != RENAMES:
            assert "deleter ran 2 times" in result["detail"] or "[2]" in result["detail"]


def test_the_same_consumer_renaming_passes_every_consumer_rule():
    results = _all_consumer_checks(_consumer(S.capsule_consumer()))
    assert not [r for r in results if r["outcome"] in FINDINGS], results


def test_null_strides_in_a_version_1_3_capsule_put_three_failures_beneath_the_root():
    framework = Framework(
        "NullStridesIn13",
        "_check_subjects",
        make=S.NullStridesIn13,
        consume=np.from_dlpack,
        to_numpy=np.from_dlpack,
        make_read_only=lambda array: S.NullStridesIn13(array, read_only=True),
    )
    subject = producer_checks.Subject(framework)
    results = []
    for rule_id, check in {**producer_checks.CHECKS, **exchange_checks.CHECKS}.items():
        if rule_id == "producer.no-leak":
            continue
        try:
            outcome, detail = check(subject)
        except Exception as error:  # noqa: BLE001 - the worker reports a check that raises so
            outcome, detail = "error", repr(error)
        results.append({"rule": rule_id, "outcome": outcome, "detail": detail})
    attach_causes(results)
    beneath = {r["rule"] for r in results if r.get("caused_by") == "producer.strides-present"}
    assert beneath == {"producer.values", "producer.zero-size", "producer.consumed-once"}
    root = next(r for r in results if r["rule"] == "producer.strides-present")
    assert root["outcome"] == "fail" and "caused_by" not in root
