/*
 * The reviewer inbox from the keyboard, and its rows' small behaviours. Keys (listed on the page):
 * j/k focus the next/previous pending item, o (or Enter) opens or closes it, a approves and r
 * rejects it, x selects it for a bulk decision, A/R approve/reject the selected. A decision clicks
 * the item's own button, so it goes the same way as a click (htmx, CSRF header, the row swapped
 * in place); once decided, the focus moves on to the next pending item, or to the first of those
 * that move up onto the page when it was the last one shown. Keys typed into a field, or with
 * Ctrl/Meta/Alt, are left alone. When the live refresh swaps in a new copy of the focused item, the
 * focus moves to that copy. A static file: the Content-Security-Policy refuses inline code.
 *
 * Nothing is approved unseen: an approval from an item's line goes through only when the line shows
 * all it decides (its summary is there, whole, not cut by the server nor clipped by the screen);
 * otherwise the first approval opens the item, and the next one, with everything in view, approves.
 */
"use strict";
(function () {
    const ITEMS = ".review-item.review-pending";
    let awaitingNext = false; // moving on found no pending item after the focused one: take the next to come

    function typing(target) {
        return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    }

    // An item whose decision is being swapped in keeps its old classes until htmx settles it (20 ms):
    // it is no longer a place to move to.
    function pending(item) {
        return item.matches(ITEMS) && !item.classList.contains("htmx-settling");
    }

    function focused() {
        return document.activeElement && document.activeElement.closest(".review-item");
    }

    function move(step) {
        const all = Array.from(document.querySelectorAll(".review-item"));
        const here = all.indexOf(focused());
        // From the focused item (pending or just decided) onwards, else from either end of the list.
        const ahead = step > 0 ? all.slice(here + 1) : all.slice(0, here === -1 ? all.length : here).reverse();
        const next = ahead.find(pending);
        awaitingNext = !next && step > 0; // the last one shown was decided: focus the next to come
        if (next) {
            next.focus();
            next.scrollIntoView({block: "nearest"});
        }
    }

    function toggle(item) {
        const button = item && item.querySelector(".review-expand");
        const body = button && document.getElementById(button.getAttribute("aria-controls"));
        if (body) {
            body.hidden = !body.hidden;
            button.setAttribute("aria-expanded", String(!body.hidden));
        }
    }

    // Whether the item's line shows all that an approval decides: a summary, neither cut by the
    // server (data-cut) nor clipped by the width of the screen.
    function wholeOnItsLine(item) {
        const summary = item.querySelector(".review-summary");
        return Boolean(summary) && summary.textContent.trim() !== "" && !summary.hasAttribute("data-cut")
            && summary.scrollWidth <= summary.clientWidth;
    }

    function opened(item) {
        const body = item.querySelector(".review-body");
        return !body || !body.hidden;
    }

    function decide(style) {
        const item = document.activeElement && document.activeElement.closest(ITEMS);
        const button = item && item.querySelector("button.decision." + style);
        if (button && !button.disabled) {
            button.click();
        }
    }

    function select() {
        const box = focused() && focused().querySelector("input.review-select");
        if (box) {
            box.checked = !box.checked;
        }
    }

    function decideSelected(decision) {
        const button = document.querySelector("#bulk-selected button[value='" + decision + "']");
        if (button && document.querySelector("#pending-items input.review-select:checked")) {
            button.click();
        }
    }

    const KEYS = {
        j: () => move(1),
        k: () => move(-1),
        o: () => toggle(focused()),
        Enter: () => toggle(focused()),
        a: () => decide("approve"),
        r: () => decide("reject"),
        x: select,
        A: () => decideSelected("approve"),
        R: () => decideSelected("reject"),
    };

    document.addEventListener("click", function (event) {
        const button = event.target instanceof Element && event.target.closest(".review-expand");
        if (button) {
            toggle(button.closest(".review-item"));
        }
    });
    // Before htmx sees the click (capture): an approval from a line that does not show everything
    // opens the item instead.
    document.addEventListener("click", function (event) {
        const button = event.target instanceof Element && event.target.closest(".review-quick button.approve");
        const item = button && button.closest(".review-item");
        if (item && !opened(item) && !wholeOnItsLine(item)) {
            event.preventDefault();
            event.stopPropagation();
            toggle(item);
        }
    }, true);
    document.addEventListener("change", function (event) {
        if (event.target instanceof HTMLInputElement && event.target.id === "select-page") {
            document.querySelectorAll("#pending-items input.review-select").forEach(function (box) {
                box.checked = event.target.checked;
            });
        }
    });

    // The focused item's id, remembered before a swap may replace it. A swap that finds nothing
    // focused (another one replaced the focused row a moment ago) keeps what was remembered, so
    // overlapping swaps (a decision, the list's refresh) never lose the reviewer's place.
    let focusedId = null;
    document.addEventListener("htmx:beforeSwap", function () {
        const item = document.activeElement && document.activeElement.closest(ITEMS);
        if (item) {
            focusedId = item.id;
        }
    });
    document.addEventListener("htmx:afterSettle", function () {
        const lost = !document.activeElement || document.activeElement === document.body;
        const again = lost && focusedId && document.getElementById(focusedId);
        if (again) {
            again.focus({preventScroll: true});
            if (!pending(again)) {
                move(1); // decided: on to the next one
            }
        } else if (awaitingNext && (lost || !document.activeElement.closest(ITEMS))) {
            move(1); // the items that moved up onto the page have arrived
        }
        if (!lost || again) {
            focusedId = null;
        }
    });

    document.addEventListener("keydown", function (event) {
        const action = KEYS[event.key];
        if (!action || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
            return;
        }
        if (event.key === "Enter" && event.target instanceof Element && event.target.closest("a, button")) {
            return; // Enter on a link or a button does what it says
        }
        event.preventDefault();
        action();
    });
})();
