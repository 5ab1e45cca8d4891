from kb_search.chunking.tokens import count_tokens, pack_lines, split_words, trim_blank_lines


def words(text: str) -> int:
    return len(text.split())


def test_count_tokens_plain_english_is_close_to_word_count():
    text = "the quick brown fox jumps over the lazy dog"
    assert 9 <= count_tokens(text) <= 14


def test_count_tokens_counts_punctuation_underscores_and_camel_case():
    assert count_tokens("") == 0
    assert count_tokens("get_user_name") >= 5  # get _ user _ name
    assert count_tokens("getUserName") >= 3
    assert count_tokens("a.b(c)") >= 6


def test_count_tokens_long_words_and_cjk_count_several_pieces():
    assert count_tokens("x" * 40) >= 10
    assert count_tokens("日本語のテキスト") >= 8


def test_split_words_respects_budget_and_keeps_all_words():
    text = " ".join(f"w{i}" for i in range(25))
    parts = split_words(text, 10, words)
    assert [words(p) for p in parts] == [10, 10, 5]
    assert " ".join(parts) == text


def test_split_words_cuts_a_giant_word_by_characters():
    parts = split_words("a" * 100, 5)
    assert "".join(parts) == "a" * 100
    assert all(count_tokens(p) <= 5 for p in parts)


def test_pack_lines_keeps_line_numbers():
    lines = ["one two", "three four", "five six", "seven"]
    pieces = pack_lines(lines, 10, 4, words)
    assert [(p.line_start, p.line_end) for p in pieces] == [(10, 11), (12, 13)]
    assert pieces[1].text == "five six\nseven"


def test_pack_lines_overlap_repeats_last_lines():
    lines = [f"l{i}" for i in range(6)]
    pieces = pack_lines(lines, 1, 3, words, overlap=1)
    assert [(p.line_start, p.line_end) for p in pieces] == [(1, 3), (3, 5), (5, 6)]


def test_pack_lines_splits_a_line_over_budget_by_words():
    pieces = pack_lines(["a b c d e f g"], 7, 3, words)
    assert [p.text for p in pieces] == ["a b c", "d e f", "g"]
    assert {(p.line_start, p.line_end) for p in pieces} == {(7, 7)}


def test_trim_blank_lines():
    assert trim_blank_lines(["", " ", "x", "", "y", ""], 1) == (["x", "", "y"], 3)
