import pytest

from paperlab.reasoning.arith import ArithConfig, arith_tokenizer, generate_arith
from paperlab.reasoning.coconut import Curriculum, collate, encode_example


def test_chains_evaluate_left_to_right_modulo():
    cfg = ArithConfig(min_steps=3, max_steps=6)
    data = generate_arith(200, config=cfg, seed=0)
    assert generate_arith(200, config=cfg, seed=0) == data and generate_arith(200, config=cfg, seed=1) != data
    for ex in data:
        words = ex.question.split()
        value, rest = int(words[1]), words[2:]
        assert words[0] == "query" and 3 <= len(ex.steps) == len(rest) // 2 <= 6
        for k, (op, operand) in enumerate(zip(rest[::2], rest[1::2], strict=True)):
            value = {"+": value + int(operand), "-": value - int(operand), "*": value * int(operand)}[op] % 100
            assert ex.steps[k] == str(value) and ex.frontier[k] == (str(value),)
        assert ex.answer == ex.answer_token == ex.steps[-1]
    assert {len(ex.steps) for ex in data} == {3, 4, 5, 6}


def test_every_method_encodes_a_chain():
    tok = arith_tokenizer()
    ex = generate_arith(1, seed=4)[0]
    cur = Curriculum(max_stage=6)
    assert tok.decode(tok.encode(ex.question)) == ex.question
    cot = encode_example(ex, tok, method="cot", stage=0, curriculum=cur)
    assert [tok.decode([t]) for t in cot.suffix[1::2][: len(ex.steps)]] == list(ex.steps)  # one token per step
    lat = encode_example(ex, tok, method="coconut", stage=cur.final_stage, curriculum=cur)
    assert lat.n_thoughts == 6 and lat.frontier == tuple((tok.id(s),) for s in ex.steps)
    batch = collate([cot, lat], pad_id=tok.pad_id)
    assert batch.frontier.shape == (2, 6, 1)


def test_bad_config_names_the_field():
    with pytest.raises(ValueError, match="max_steps"):
        ArithConfig(min_steps=4, max_steps=3)
    with pytest.raises(ValueError, match="ops"):
        ArithConfig(ops=("/",))
