"""Bounds: a visitor opens only what the server offers, and no model folder or link can exhaust the server.

Each test is one attack of docs/reliability.md's *Bounds* table, tried as a careless user or an attacker would: a
visitor on another machine (in AppTest, as behind a proxy, no browser on the server's own machine), a link that names
a folder of the server, many spellings of one folder, a config.json that lies about its model, a tokenizer file of
a gigabyte, a configuration nested 100,000 deep, Markdown in a name.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import torch
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from tests.conftest import needs_browser, no_exceptions
from tests.hub_models import make_marian
from transformer.features import lessons
from transformer.formats import checkpoint, checkpoint_files, hub
from transformer.formats.checkpoint import REPOSITORY_CHECKPOINTS, CheckpointError, load_checkpoint
from transformer.formats.hub.families import is_hub_folder

REPOSITORY = Path(__file__).resolve().parent.parent
WHAT_IF = REPOSITORY / "pages" / "what_if.py"
IMAGE = "![x](http://elsewhere.example/p.png)"


@pytest.fixture
def tiny(trained_checkpoint: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = shutil.copytree(trained_checkpoint, tmp_path / "tiny")
    monkeypatch.setenv("TRANSFORMER_CHECKPOINT", str(folder))
    monkeypatch.setenv("TRANSFORMER_TRANSLATION_PROCESS", "0")
    return folder


@pytest.fixture(scope="module")
def marian(tmp_path_factory) -> Path:
    return make_marian(REPOSITORY_CHECKPOINTS / "en-de-small" / "spm.model", tmp_path_factory.mktemp("hub") / "marian")


@pytest.fixture
def fresh_caches():
    import streamlit as st

    st.cache_resource.clear()
    st.cache_data.clear()
    yield
    st.cache_resource.clear()  # the translation processes of what a test opened end with it


def what_if_link(**query: str) -> AppTest:
    app = AppTest.from_file(str(WHAT_IF), default_timeout=180)
    query = {"v": "2", "wi_text": "the cat sees the dog.", **query}
    for key, value in query.items():
        app.query_params[key] = value
    return app.run()


def loads_of(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every folder the app's cache loads from now on."""
    seen: list[str] = []
    real = checkpoint.load_checkpoint

    def spy(name_or_path=None, *arguments, **keywords):
        seen.append(str(name_or_path))
        return real(name_or_path, *arguments, **keywords)

    monkeypatch.setattr("pages.models.load_checkpoint", spy)
    return seen


def rendered(markdown: str) -> str:
    """HTML as a CommonMark renderer makes it (Streamlit's renders the same constructs)."""
    return MarkdownIt("commonmark").render(markdown)


# 1. A link opens any folder on the server ------------------------------------------------------------------------


def test_a_link_from_another_machine_opens_no_folder_and_names_no_path(tiny, tmp_path, monkeypatch, fresh_caches):
    other = shutil.copytree(tiny, tmp_path / "elsewhere")
    loads = loads_of(monkeypatch)
    for folder in (str(other), "/etc", str(tmp_path / "missing")):
        app = what_if_link(wi_tab="compare", wi_mode="checkpoints", wi_other_path=folder)
        no_exceptions(app)
        shown = " ".join(element.value for element in [*app.error, *app.info, *app.warning])
        assert "not opened" in shown  # the visitor is told the link's folder was not opened
        assert "/etc" not in shown and str(tmp_path) not in shown and str(REPOSITORY) not in shown
        assert "wi_other_path" not in [box.key for box in app.text_input]  # no box to type a folder into
    assert not any(str(other) in load or "/etc" in load or "missing" in load for load in loads), loads


def test_a_folder_named_in_the_sidebar_link_is_not_opened_for_a_remote_visitor(
    tiny, tmp_path, monkeypatch, fresh_caches
):
    other = shutil.copytree(tiny, tmp_path / "elsewhere")
    loads = loads_of(monkeypatch)
    app = AppTest.from_file(str(REPOSITORY / "app.py"), default_timeout=180)
    app.query_params["checkpoint"] = str(other)
    app.run()
    no_exceptions(app)
    assert app.sidebar.selectbox(key="checkpoint").value == str(tiny)
    assert not any(str(other) in load for load in loads)


def test_the_gate_refuses_unlisted_folders_and_says_nothing_of_the_disk(tiny, monkeypatch, fresh_caches):
    from pages import models

    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "0")
    for name in ("/etc", "/nonexistent/folder", "../../etc", "x" * 600):
        with pytest.raises(CheckpointError) as refused:
            models.open_checkpoint(name)
        assert "/" not in str(refused.value) and "lists" in str(refused.value)
    assert models.open_checkpoint(str(tiny)).path == tiny.resolve()  # a listed model opens
    # Open to every visitor (a laptop's own browser, or TRANSFORMER_OPEN_FOLDERS=1): the server's paths in an error
    # are still shortened for a visitor elsewhere, as a shipped checkpoint records them.
    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    with pytest.raises(CheckpointError) as missing:
        models.open_checkpoint("/etc")
    assert "/etc" not in str(missing.value) and str(REPOSITORY) not in str(missing.value)


# 2. Processes without limit ---------------------------------------------------------------------------------------


def test_every_spelling_of_a_folder_is_one_model(tiny, monkeypatch, fresh_caches):
    from pages import models

    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    link = tiny.parent / "link"
    link.symlink_to(tiny, target_is_directory=True)
    monkeypatch.chdir(tiny.parent)
    spellings = [str(tiny), "tiny", "./tiny", f"{tiny.parent}/../{tiny.parent.name}/tiny", str(link), "link/"]
    opened = [models.open_checkpoint(spelling) for spelling in spellings]
    assert all(model is opened[0] for model in opened)
    assert opened[0].path == tiny.resolve()


def alive(pid: int) -> bool:
    done = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
    return done.returncode == 0 and not done.stdout.strip().startswith("Z")


def wait_for(condition, timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return False


def test_translation_processes_are_bounded_and_end_with_their_model(tiny, tmp_path, monkeypatch, fresh_caches):
    """Six models opened one after another (the cache keeps four): never more children than the setting allows,
    and a model's child ends when the cache lets the model go."""
    from pages import models
    from transformer.serving.translator import CHILDREN

    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    monkeypatch.setenv("TRANSFORMER_TRANSLATION_PROCESS", "1")
    monkeypatch.setenv("TRANSFORMER_TRANSLATION_PROCESSES", "2")
    folders = [shutil.copytree(tiny, tmp_path / f"copy-{index}") for index in range(6)]
    queues, pids = [], []
    for folder in folders:
        queue = models.shared_translator(models.open_checkpoint(str(folder)))
        assert queue._starting is None or wait_for(lambda q=queue: not q._starting.is_alive())
        queues.append(queue)
        if queue.process is not None:
            pids.append(queue.process.pid)
        assert CHILDREN.running <= 2
        assert sum(alive(pid) for pid in pids) <= 2
    assert len(pids) >= 2  # the setting's two children did start
    assert any("not started" in failure for queue in queues for failure in queue.process_failures)
    # The first two models have left the cache (it keeps four): their children are gone.
    assert wait_for(lambda: not any(alive(pid) for pid in pids[:2]), 30)
    assert queues[0].translate("the cat sees the dog.").translation is not None  # a queue let go still answers


# 3. A lying config is allocated before it is checked --------------------------------------------------------------


@pytest.fixture
def real_builds(monkeypatch) -> list:
    """Every Transformer built on a real device (not ``meta``) while opening a folder."""
    built = []
    real = checkpoint.Transformer

    def spy(config):
        model = real(config)
        if not next(model.parameters()).is_meta:
            built.append(config)
        return model

    monkeypatch.setattr(checkpoint, "Transformer", spy)
    monkeypatch.setattr(hub, "Transformer", spy)
    return built


def test_a_hugging_face_config_that_lies_is_refused_before_anything_is_built(marian, tmp_path, real_builds):
    folder = shutil.copytree(marian, tmp_path / "liar")
    config = json.loads((folder / "config.json").read_text())
    config.update(d_model=4096, encoder_layers=24, decoder_layers=24, encoder_ffn_dim=16384, decoder_ffn_dim=16384)
    (folder / "config.json").write_text(json.dumps(config))
    started = time.perf_counter()
    with pytest.raises(CheckpointError, match="config.json implies"):
        load_checkpoint(folder)
    assert time.perf_counter() - started < 20  # was 27 s of allocation, then out of memory
    assert real_builds == []


def test_a_native_config_that_lies_is_refused_before_the_weights_are_read(tiny, tmp_path, monkeypatch, real_builds):
    folder = shutil.copytree(tiny, tmp_path / "liar")
    config = json.loads((folder / "config.json").read_text())
    config.update(d_model=4096, d_ff=16384, encoder_layers=24, decoder_layers=24, num_heads=16)
    (folder / "config.json").write_text(json.dumps(config))
    read = []
    monkeypatch.setattr(checkpoint, "read_tensors", lambda path: read.append(path))
    with pytest.raises(CheckpointError, match="does not match config.json"):
        load_checkpoint(folder)
    assert read == [] and real_builds == []


def test_a_model_larger_than_free_memory_is_refused_from_its_config(tiny, marian, monkeypatch, real_builds):
    needed = checkpoint_files.model_bytes(checkpoint.load_config(tiny))
    monkeypatch.setattr(checkpoint_files, "available_memory", lambda: needed // 2)
    for folder in (tiny, marian):
        with pytest.raises(CheckpointError, match="GB of memory"):
            load_checkpoint(folder)
    assert real_builds == []


@pytest.mark.parametrize("family", ["native", "marian"])
def test_running_out_of_memory_while_opening_is_a_checkpoint_error(family, tiny, marian, monkeypatch):
    def no_memory(config):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:118] DefaultCPUAllocator: can't allocate memory")

    monkeypatch.setattr(checkpoint if family == "native" else hub, "Transformer", no_memory)
    with pytest.raises(CheckpointError, match="not enough memory"):
        load_checkpoint(tiny if family == "native" else marian)


# 4. Markdown in an error box --------------------------------------------------------------------------------------


def test_markdown_in_a_typed_name_is_shown_as_text(tiny, monkeypatch, fresh_caches):
    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    app = what_if_link(wi_tab="compare", wi_mode="checkpoints", wi_other_path=IMAGE)
    no_exceptions(app)
    assert app.error
    for error in app.error:
        html = rendered(error.value)
        assert "<img" not in html and "<a " not in html
        assert "elsewhere.example/p.png" in html  # the name is shown, as text


def test_escaped_text_renders_as_itself():
    from pages.i18n import escaped

    for text in (IMAGE, "<script>alert(1)</script>", "**bold** _it_ `code` # head", ":red[x] :material/home: $x^2$"):
        html = rendered(escaped(text))
        assert html == f"<p>{text.replace('&', '&amp;').replace('<', '&lt;').replace('>', '&gt;')}</p>\n".replace(
            '"', "&quot;"
        )


# 5. A config nested 100,000 deep ----------------------------------------------------------------------------------


@pytest.mark.parametrize("family", ["native", "marian"])
def test_a_config_nested_beyond_recursion_is_a_checkpoint_error(family, tiny, marian, tmp_path):
    folder = shutil.copytree(tiny if family == "native" else marian, tmp_path / "deep")
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    assert not is_hub_folder(folder)
    with pytest.raises(CheckpointError, match="nested too deeply"):
        load_checkpoint(folder)
    (folder / "config.json").write_text('{"model_type": "marian", "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(CheckpointError, match="nested too deeply"):
        load_checkpoint(folder)


def test_the_page_says_what_is_wrong_with_a_deep_config(tiny, tmp_path, monkeypatch, fresh_caches):
    folder = shutil.copytree(tiny, tmp_path / "deep")
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    monkeypatch.setenv("TRANSFORMER_OPEN_FOLDERS", "1")
    app = AppTest.from_file(str(REPOSITORY / "app.py"), default_timeout=180).run()
    app.sidebar.text_input(key="open_model").input(str(folder)).run()
    no_exceptions(app)
    assert any("nested too deeply" in error.value for error in app.sidebar.error)


# 6. Folder opening switched off in one place ----------------------------------------------------------------------


def test_a_class_server_switches_folder_opening_off_in_one_place():
    deploy = (REPOSITORY / "docs" / "deploy.md").read_text(encoding="utf-8")
    script = (REPOSITORY / "scripts" / "serve_class.sh").read_text(encoding="utf-8")
    assert "TRANSFORMER_OPEN_FOLDERS=0" in deploy and "TRANSFORMER_OPEN_FOLDERS" in script
    assert "loopback" in deploy and "tunnel" in deploy  # what "a browser on the server's machine" means
    done = subprocess.run(
        [
            "bash",
            "-c",
            f"source <(sed -n '/^export TRANSFORMER_OPEN_FOLDERS/p' {REPOSITORY / 'scripts/serve_class.sh'})"
            " && echo $TRANSFORMER_OPEN_FOLDERS",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "TRANSFORMER_OPEN_FOLDERS": ""},
    )
    assert done.stdout.strip() == "0"


# Not probed before: tokenizer files, lessons -----------------------------------------------------------------------


def test_a_tokenizer_file_of_a_gigabyte_is_refused_unread(marian, tmp_path):
    folder = shutil.copytree(marian, tmp_path / "huge")
    with (folder / "source.spm").open("r+b") as handle:
        handle.truncate(2**30)  # sparse: a gigabyte on paper, nothing on the disk
    with pytest.raises(CheckpointError, match="larger than any tokenizer"):
        load_checkpoint(folder)


def test_a_tokenizer_file_of_random_bytes_is_a_checkpoint_error(marian, tmp_path):
    folder = shutil.copytree(marian, tmp_path / "noise")
    generator = torch.Generator().manual_seed(0)
    for name in ("source.spm", "target.spm", "vocab.json"):
        (folder / name).write_bytes(bytes(torch.randint(0, 256, (50_000,), generator=generator).tolist()))
    with pytest.raises(CheckpointError, match="tokenizer"):
        load_checkpoint(folder)


def test_a_lesson_of_ten_megabytes_is_refused_unread(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LESSONS", str(tmp_path))
    (tmp_path / "huge.toml").write_text('title = "x"\n' + "# padding\n" * 1_000_000)
    with pytest.raises(lessons.LessonError, match="MB"):
        lessons.read_lesson("huge")
    (tmp_path / "deep.toml").write_text("x = " + "[" * 100_000 + "]" * 100_000)
    with pytest.raises(lessons.LessonError):
        lessons.read_lesson("deep")


def test_script_tags_in_a_lesson_are_shown_as_text(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFORMER_LESSONS", str(tmp_path))
    (tmp_path / "evil.toml").write_text(
        'title = { en = "<script>window.x=1</script>Evil" }\n\n[[steps]]\npage = "explore"\n'
        'title = { en = "<img src=x onerror=alert(1)>" }\ntext = { en = "<script>alert(1)</script>" }\n'
    )
    app = AppTest.from_file(str(REPOSITORY / "app.py"), default_timeout=180)
    app.query_params["lesson"] = "evil"
    app.run()
    no_exceptions(app)
    blocks = [block for block in app.markdown if "script" in block.value or "onerror" in block.value]
    assert blocks  # the lesson's text is shown…
    assert all(not block.proto.allow_html for block in blocks)  # …as Markdown, in which HTML is shown as text


# In Chromium: a visitor from another machine, as every request through a proxy announces one ----------------------


@needs_browser
@pytest.mark.slow
def test_in_chromium_a_remote_link_opens_no_folder_and_markdown_fetches_nothing(browser, trained_checkpoint, tmp_path):
    from benchmarks.app_server import serving

    other = shutil.copytree(trained_checkpoint, tmp_path / "elsewhere")
    log = tmp_path / "server.log"
    environment = {**os.environ, "TRANSFORMER_OPEN_FOLDERS": ""}
    with serving(str(trained_checkpoint), log, environment=environment) as (origin, _):
        remote = browser.new_context(extra_http_headers={"X-Forwarded-For": "192.0.2.7"})
        local = browser.new_context()  # loopback, no forwarding header: the server's own machine
        fetched: list[str] = []
        for context in (remote, local):
            context.route(
                "http://elsewhere.example/**", lambda route: (fetched.append(route.request.url), route.abort())
            )
        try:
            page = remote.new_page()
            page.goto(f"{origin}/what_if?v=2&wi_tab=compare&wi_mode=checkpoints&wi_other_path={other}")
            page.get_by_text("not opened").wait_for(timeout=180_000)
            assert page.locator("[data-testid=stException]").count() == 0
            shown = page.locator("[data-testid=stMain]").inner_text()
            assert str(tmp_path) not in shown and str(other) not in shown
            assert page.get_by_label("Or any checkpoint folder").count() == 0
            page = local.new_page()
            page.goto(f"{origin}/what_if?v=2&wi_tab=compare&wi_mode=checkpoints&wi_other_path={IMAGE}")
            page.locator("[data-testid=stAlertContentError]").first.wait_for(timeout=180_000)
            assert "elsewhere.example/p.png" in page.locator("[data-testid=stAlertContentError]").first.inner_text()
            page.wait_for_timeout(1000)
            assert page.locator("[data-testid=stAlertContentError] img").count() == 0 and fetched == []
        finally:
            remote.close()
            local.close()
    assert str(other) not in log.read_text(errors="replace")  # no model, no translation process for it
