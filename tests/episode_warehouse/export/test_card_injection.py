"""Text from a source cannot become Markdown in a published card (#42): rendered with a
CommonMark parser, the card has exactly our headings, no image, no link, and no local path."""

from __future__ import annotations

from markdown_it import MarkdownIt

from episode_warehouse.export.card import SourcePartition, dataset_card
from episode_warehouse.export.record import ExportRecord

HOSTILE = [
    "x](javascript:alert(1))",
    "![t](https://tracker.example/pixel.png)",
    "so100\n# Fake heading\n[click](javascript:alert(1))",
    "<img src=https://tracker.example/p.png>",
    "`` ` ``</td>| col |",
]
OUR_HEADINGS = ["hf/x", "Selection", "Where every episode came from", "License", "Load it"]


def _card(value: str, source_url: str = "/home/me/secret-datasets/lab") -> str:
    export = ExportRecord(
        version="1",
        inputs={},
        name="n",
        frames=10,
        episodes=1,
        request={"query": f"SELECT * FROM episodes -- {value}\n```\n# not a heading"},
        episode_list=[["lerobot", value, 0, 0, 10]],
    )
    partition = SourcePartition(
        source="lerobot",
        partition=value,
        ted_version=value,
        source_url=source_url,
        episodes=1,
        frames=10,
        license=value,
    )
    return dataset_card("hf/x", {"fps": value, "robot_type": value}, export, [partition])


def _tokens(card: str):
    body = card.split("\n---\n", 1)[1]  # below the YAML header
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    flat = [t for tok in tokens for t in [tok, *(tok.children or [])]]
    return body, tokens, flat


def test_hostile_source_text_renders_as_text():
    for value in HOSTILE:
        body, tokens, flat = _tokens(_card(value))
        headings = [
            "".join(c.content for c in tokens[i + 1].children if c.type == "text")
            for i, t in enumerate(tokens)
            if t.type == "heading_open"
        ]
        assert headings == OUR_HEADINGS, (value, headings)
        assert not [
            t for t in flat if t.type in ("image", "link_open", "html_inline", "html_block")
        ]
        assert "javascript:" not in "".join(t.attrGet("href") or "" for t in flat)


def test_the_sql_stays_inside_its_code_block():
    _, tokens, _ = _tokens(_card("x"))
    fences = [t for t in tokens if t.type == "fence"]
    assert len(fences) == 2 and fences[0].info == "sql"
    assert "# not a heading" in fences[0].content


def test_a_local_folder_is_never_named_a_public_url_is():
    assert "/home/me" not in _card("x")
    assert "a local folder (not published)" in _card("x")
    public = _card("x", source_url="gs://gresearch/robotics/bridge/0.1.0")
    assert "gs://gresearch/robotics/bridge/0" in public.replace("\\", "")


def test_the_yaml_header_quotes_what_it_holds():
    import yaml

    card = _card("so100\n# Fake: [x]\n---\nlicense: mit")
    lines = card.splitlines()
    end = lines.index("---", 1)  # the first line that ends the header, as the hub reads it
    header = yaml.safe_load("\n".join(lines[1:end]))
    assert header["robot_type"] == "so100 # Fake: [x] --- license: mit"
    assert header["license"] == "other"
    assert lines[end + 1 : end + 3] == ["", "# hf/x"]
