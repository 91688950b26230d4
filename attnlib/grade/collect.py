"""``attnlib collect``: an LMS's bulk download in, ``handed-in/<login>/NN_name.ipynb`` out.

``attnlib collect submissions.zip --out handed-in`` reads a bulk download, zipped or
unpacked, and writes each student's notebooks into a folder of their own, named as the
course names them, ready for ``attnlib check handed-in/*/``. It knows three layouts:

``canvas``: *Download Submissions* gives one flat folder of files named
    ``<name>_<user id>_<file id>_<file name>`` (``late`` after the name when late, e.g.
    ``smithjane_late_4101_88231_03_scoring-1.ipynb``; Canvas adds ``-1``, ``-2`` to a file
    handed in again). The student's folder is ``<name>``, or ``<name>-<user id>`` when two
    students share a name.
``moodle``: *Download all submissions* gives one folder per student,
    ``<Full Name>_<participant id>_assignsubmission_file_`` (older versions put the same
    prefix before each file name instead). The folder is the full name with ``_`` for
    spaces, or ``<name>-<participant id>`` when two share a name.
``gradescope``: *Export Submissions* gives ``submission_metadata.yml`` and one
    ``submission_<id>/`` folder per submission; the metadata names the submitters. The
    folder is the first submitter's e-mail login (before ``@``), else their student id,
    else ``submission_<id>``.

``--lms auto`` (default) picks the layout from the names. A file name is matched to a
lesson by :func:`attnlib.grade.intake.lesson_of` (``03_scoring (1).ipynb`` is lesson
``03_scoring``) and written as ``03_scoring.ipynb``; a notebook that matches no lesson
keeps its own (cleaned) name, and the grader reports it; two notebooks for one lesson
from one student both keep their names and are reported here and by the grader, never
silently chosen. Only ``.ipynb`` files are taken; others are counted.

A zip is untrusted input and is never extracted by path: its entries are read in memory,
each at most :data:`NOTEBOOK_SIZE` bytes and all together at most :data:`TOTAL_SIZE`
(counted as they are inflated, whatever the zip's headers claim), at most
:data:`ENTRIES` entries; an entry whose name is absolute or climbs out (``../``), a
symbolic link or a nested zip is refused and reported; the output paths are made here
from cleaned names, and no file is written through a link or over an existing one.
"""

import os
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath

from . import safe
from .intake import NOTEBOOK_SIZE, escape, lesson_of, read_regular

TOTAL_SIZE = 2 * 2**30  # bytes read from one download in all
ENTRIES = 100_000  # entries (files and folders) one download may have
LAYOUTS = ("auto", "canvas", "moodle", "gradescope")
CANVAS = re.compile(r"^(?P<who>[^_/]+?)_(?:late_|LATE_)?(?P<uid>\d+)_(?P<fid>\d+)_(?P<name>.+)$")
MOODLE = re.compile(r"^(?P<who>.+?)_(?P<uid>\d+)_assignsubmission_[a-z]+_(?P<name>.*)$")
METADATA = "submission_metadata.yml"  # Gradescope's list of who handed in what
GRADESCOPE_FOLDER = re.compile(r"^submission_(?P<uid>\d+)$")


class CollectError(ValueError):
    """The download cannot be read at all (exit status 2)."""


def clean(name, fallback="student"):
    """A name safe as one folder or file name: letters (any script), digits, ``._@-``, and
    ``_`` for the rest (spaces, slashes, control characters, formula signs).

    >>> clean("Jane Smith"), clean("../../etc"), clean("=1+1"), clean(""), clean("José García")
    ('Jane_Smith', 'etc', '1_1', 'student', 'José_García')
    """
    text = re.sub(r"[^\w.@-]+", "_", safe.text(name)).strip("._-")
    return text or fallback


def _entries_of_zip(path, problems):
    """``[(posix path, bytes), ...]`` of a zip's regular files, read within the caps."""
    found, total = [], 0
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as err:
        raise CollectError(f"{escape(path)}: not a zip that can be read ({err}).") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > ENTRIES:
            raise CollectError(f"{escape(path)}: {len(infos)} entries, more than {ENTRIES}.")
        for info in infos:
            name = info.filename
            parts = PurePosixPath(name.replace("\\", "/")).parts
            mode = info.external_attr >> 16
            if name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name) or ".." in parts:
                problems.append(f"{escape(name)}: refused (its path leaves the download)")
                continue
            if stat.S_ISLNK(mode):
                problems.append(f"{escape(name)}: refused (a symbolic link)")
                continue
            if info.is_dir():
                continue
            if not name.endswith((".ipynb", METADATA)):
                if name.lower().endswith(".zip"):
                    problems.append(f"{escape(name)}: refused (a zip inside the zip)")
                found.append(("/".join(parts), None))  # counted, not read
                continue
            try:
                with zf.open(info) as f:
                    data = f.read(NOTEBOOK_SIZE + 1)
            except (OSError, zipfile.BadZipFile, RuntimeError, EOFError) as err:
                problems.append(f"{escape(name)}: could not be read ({err})")
                continue
            if len(data) > NOTEBOOK_SIZE:
                problems.append(f"{escape(name)}: refused (more than {NOTEBOOK_SIZE} bytes)")
                continue
            total += len(data)
            if total > TOTAL_SIZE:
                raise CollectError(f"{escape(path)}: more than {TOTAL_SIZE} bytes in all.")
            found.append(("/".join(parts), data))
    return found


def _entries_of_folder(folder, problems):
    """``[(posix path, bytes), ...]`` under a folder, never through a link."""
    found, total, count = [], 0, 0
    folder = Path(folder)
    for top, dirs, files in os.walk(folder, followlinks=False):
        for d in list(dirs):
            if os.path.islink(os.path.join(top, d)):
                dirs.remove(d)
                problems.append(f"{escape(os.path.join(top, d))}: refused (a symbolic link)")
        for name in sorted(files):
            count += 1
            if count > ENTRIES:
                raise CollectError(f"{escape(folder)}: more than {ENTRIES} files.")
            path = Path(top) / name
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                problems.append(f"{escape(path)}: refused (a symbolic link)")
                continue
            if not name.endswith((".ipynb", METADATA)):
                found.append((relative, None))
                continue
            data = read_regular(path, NOTEBOOK_SIZE)
            if not isinstance(data, bytes):
                problems.append(f"{escape(path)}: refused ({data})")
                continue
            total += len(data)
            if total > TOTAL_SIZE:
                raise CollectError(f"{escape(folder)}: more than {TOTAL_SIZE} bytes in all.")
            found.append((relative, data))
    return found


def _strip_wrapper(entries):
    """Drop one top folder that holds everything (a zip of a folder), unless it is a
    student's own (Moodle's or Gradescope's)."""
    tops = {path.split("/", 1)[0] for path, _ in entries}
    if len(tops) == 1 and all("/" in path for path, _ in entries):
        top = tops.pop()
        if not (MOODLE.match(top) or GRADESCOPE_FOLDER.match(top)):
            return [(path.split("/", 1)[1], data) for path, data in entries], top
    return entries, None


def gradescope_submitters(text):
    """``{folder: login}`` from ``submission_metadata.yml`` (read without a YAML library).

    The file maps each ``submission_<id>`` folder to its ``:submitters:``, each with
    ``:name:``, ``:sid:`` and ``:email:``; the first submitter names the folder.

    >>> gradescope_submitters('''submission_7:
    ...   :submitters:
    ...   - :name: Jane Smith
    ...     :sid: "4101"
    ...     :email: jsmith@uni.example
    ...   :score: 5.0''')
    {'submission_7': 'jsmith'}
    """
    found, folder, person, submitters = {}, None, {}, False
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        top = re.match(r"^([^\s:][^:]*):\s*$", line)
        if top:
            folder, person, submitters = top.group(1).strip("'\""), {}, False
            continue
        if folder is None:
            continue
        if re.match(r"^\s*:submitters:\s*$", line):
            submitters = True
            continue
        field = re.match(r"^\s*(-\s+)?:(name|sid|email):\s*(.*)$", line)
        if submitters and field:
            if field.group(1) and person:  # the next submitter: the first one names it
                submitters = False
                continue
            person[field.group(2)] = field.group(3).strip().strip("'\"")
            login = (person.get("email") or "").split("@")[0] or person.get("sid")
            if login:
                found[folder] = login
        elif re.match(r"^\s{0,2}:\w+:", line) and not field:
            submitters = False
    return found


def detect(entries):
    """The layout of a download's entries (one of :data:`LAYOUTS` but ``auto``)."""
    names = [path for path, _ in entries]
    if "submission_metadata.yml" in names or any(
        GRADESCOPE_FOLDER.match(p.split("/", 1)[0]) for p in names if "/" in p
    ):
        return "gradescope"
    if any(MOODLE.match(p.split("/", 1)[0]) for p in names):
        return "moodle"
    if any(CANVAS.match(p) for p in names if "/" not in p):
        return "canvas"
    raise CollectError(
        "the download's names fit no layout: Canvas (name_userid_fileid_file.ipynb), Moodle "
        "(Full Name_12345_assignsubmission_file_/) or Gradescope (submission_metadata.yml); "
        "give --lms, or make handed-in/<login>/ folders yourself"
    )


def _owners(entries, layout):
    """``[(person, key, file name, data), ...]``: whose each notebook is."""
    owned = []
    logins = {}
    if layout == "gradescope":
        meta = next((d for p, d in entries if p == "submission_metadata.yml"), None)
        logins = gradescope_submitters(meta.decode("utf-8", "replace")) if meta else {}
    for path, data in entries:
        if data is None or not path.endswith(".ipynb"):
            continue
        parts = path.split("/")
        if layout == "canvas":
            match = CANVAS.match(parts[-1])
            if match:
                owned.append((match["who"], match["uid"], match["name"], data))
                continue
        elif layout == "moodle":
            match = MOODLE.match(parts[0])
            if match and len(parts) > 1:
                owned.append((match["who"], match["uid"], parts[-1], data))
                continue
            if match:  # the older flat layout: the prefix before each file's name
                owned.append((match["who"], match["uid"], match["name"], data))
                continue
        elif layout == "gradescope" and len(parts) > 1:
            folder = parts[0]
            owned.append((logins.get(folder, folder), folder, parts[-1], data))
            continue
        owned.append((None, None, path, data))
    return owned


def plan(entries, layout="auto"):
    """``({(folder, file name): bytes}, notes)``: what to write, and what to say."""
    entries, _ = _strip_wrapper(entries)
    if layout == "auto":
        layout = detect(entries)
    notes = []
    owned = _owners(entries, layout)
    keys = {}
    for person, key, _, _ in owned:
        if person is not None:
            keys.setdefault(clean(person), set()).add(key)
    files = {}
    by_lesson = {}
    for person, key, name, data in owned:
        if person is None:
            notes.append(f"{escape(name)}: not a file of a student ({layout} layout); skipped")
            continue
        folder = clean(person)
        if len(keys[folder]) > 1:  # two students with one name: add their id
            folder = f"{folder}-{clean(key)}"
        stem = name[: -len(".ipynb")]
        lesson, exact = lesson_of(stem)
        by_lesson.setdefault((folder, lesson or f"?{stem}"), []).append((name, data, exact))
    for (folder, lesson), found in sorted(by_lesson.items()):
        if not lesson.startswith("?") and len(found) == 1:
            name, data, exact = found[0]
            files[(folder, f"{lesson}.ipynb")] = data
            if not exact:
                notes.append(f"{folder}: {escape(name)} -> {lesson}.ipynb")
            continue
        if not lesson.startswith("?"):
            listed = ", ".join(escape(n) for n, _, _ in found)
            notes.append(
                f"{folder}: {len(found)} notebooks for lesson {lesson} ({listed}): all kept "
                "under their own names; the grader reports them until one is left"
            )
        for name, data, _ in found:
            target = clean(name[: -len(".ipynb")], "notebook") + ".ipynb"
            if lesson.startswith("?"):
                notes.append(f"{folder}: {escape(name)} matches no lesson; kept as {target}")
            files[(folder, target)] = data
    return files, notes, layout


def write(files, out, overwrite=False):
    """Write the planned files under ``out``; return the notes about files not written."""
    notes = []
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for (folder, name), data in sorted(files.items()):
        where = out / folder
        if where.is_symlink() or (where.exists() and not where.is_dir()):
            notes.append(f"{escape(where)}: not a folder (or a link): nothing written there")
            continue
        where.mkdir(exist_ok=True)
        path = where / name
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if overwrite else os.O_EXCL)
        try:
            fd = os.open(path, flags, 0o644)
        except FileExistsError:
            notes.append(f"{escape(path)}: exists; kept (--overwrite replaces it)")
            continue
        except OSError as err:
            notes.append(f"{escape(path)}: not written ({err.strerror})")
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    return notes


def collect(source, out, layout="auto", overwrite=False):
    """Read a download (zip or folder) and write ``out/<login>/NN_name.ipynb``.

    Returns ``{"layout", "students", "notebooks", "skipped", "notes", "refused"}``.
    """
    if layout not in LAYOUTS:
        raise CollectError(f"--lms must be one of {', '.join(LAYOUTS)}, got {layout!r}.")
    problems = []
    source = Path(source)
    if source.is_symlink():
        raise CollectError(f"{escape(source)}: a symbolic link; give the file itself.")
    if source.is_dir():
        entries = _entries_of_folder(source, problems)
    elif source.is_file():
        entries = _entries_of_zip(source, problems)
    else:
        raise CollectError(f"{escape(source)}: no such zip or folder.")
    files, notes, layout = plan(entries, layout)
    notes += write(files, out, overwrite)
    return {
        "layout": layout,
        "students": len({folder for folder, _ in files}),
        "notebooks": len(files),
        "skipped": sum(1 for _, d in entries if d is None),
        "notes": notes,
        "refused": problems,
    }
