/*
 * Keyboard shortcuts of the reviewer inbox: j/k move the focus to the next/previous pending item,
 * a approves and r rejects the focused one (by clicking its own button, so the decision goes the
 * same way as a click: htmx, CSRF header, the row swapped in place). Keys typed into a field, or
 * with a modifier, are left alone. When the live refresh swaps in a new copy of the focused item,
 * the focus moves to that copy, so j/k go on from where the reviewer was. A static file: the
 * Content-Security-Policy refuses inline code.
 */
"use strict";
(function () {
    const ITEMS = ".review-item.review-pending";

    function typing(target) {
        return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    }

    // An item whose decision is being swapped in keeps its old classes until htmx settles it (20 ms):
    // it is no longer a place to move to.
    function pending(item) {
        return item.matches(ITEMS) && !item.classList.contains("htmx-settling");
    }

    function move(step) {
        const all = Array.from(document.querySelectorAll(".review-item"));
        const here = all.indexOf(document.activeElement && document.activeElement.closest(".review-item"));
        // From the focused item (pending or just decided) onwards, else from either end of the list.
        const ahead = step > 0 ? all.slice(here + 1) : all.slice(0, here === -1 ? all.length : here).reverse();
        const next = ahead.find(pending);
        if (next) {
            next.focus();
            next.scrollIntoView({block: "nearest"});
        }
    }

    function decide(style) {
        const item = document.activeElement && document.activeElement.closest(ITEMS);
        const button = item && item.querySelector(".decision-buttons button." + style);
        if (button && !button.disabled) {
            button.click();
        }
    }

    const KEYS = {j: () => move(1), k: () => move(-1), a: () => decide("approve"), r: () => decide("reject")};

    let focusedId = null;
    document.addEventListener("htmx:beforeSwap", function () {
        const item = document.activeElement && document.activeElement.closest(ITEMS);
        focusedId = item ? item.id : null;
    });
    document.addEventListener("htmx:afterSettle", function () {
        const lost = !document.activeElement || document.activeElement === document.body;
        const again = focusedId && document.getElementById(focusedId);
        if (lost && again) {
            again.focus({preventScroll: true});
        }
        focusedId = null;
    });

    document.addEventListener("keydown", function (event) {
        const action = KEYS[event.key];
        if (!action || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
            return;
        }
        event.preventDefault();
        action();
    });
})();
