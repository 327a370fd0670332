/*
 * Keyboard shortcuts of the reviewer inbox: j/k move the focus to the next/previous pending item,
 * a approves and r rejects the focused one (by clicking its own button, so the decision goes the
 * same way as a click: htmx, CSRF header, the row swapped in place). Keys typed into a field, or
 * with a modifier, are left alone. A static file: the Content-Security-Policy refuses inline code.
 */
"use strict";
(function () {
    const ITEMS = ".review-item.review-pending";

    function typing(target) {
        return target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
    }

    function move(step) {
        const items = Array.from(document.querySelectorAll(ITEMS));
        if (items.length === 0) {
            return;
        }
        const current = items.indexOf(document.activeElement && document.activeElement.closest(ITEMS));
        const next = current === -1 ? (step > 0 ? 0 : items.length - 1) : Math.min(Math.max(current + step, 0), items.length - 1);
        items[next].focus();
        items[next].scrollIntoView({block: "nearest"});
    }

    function decide(style) {
        const item = document.activeElement && document.activeElement.closest(ITEMS);
        const button = item && item.querySelector(".decision-buttons button." + style);
        if (button && !button.disabled) {
            button.click();
        }
    }

    const KEYS = {j: () => move(1), k: () => move(-1), a: () => decide("approve"), r: () => decide("reject")};

    document.addEventListener("keydown", function (event) {
        const action = KEYS[event.key];
        if (!action || event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) {
            return;
        }
        event.preventDefault();
        action();
    });
})();
