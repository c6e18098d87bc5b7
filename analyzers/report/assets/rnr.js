// report.html's rnr marks (package rnr, docs/odp.md): each RNR wait (from
// the RNR NAK to the retry) and each silent timeout's stall shaded on its
// connection's time-sequence graph, labelled, with a legend entry. The
// page includes this script only when the report has such marks, after
// page.js: it adds a draw hook to every graph page.js makes (window.lumina).
"use strict";
(function () {
	const L = window.lumina;
	const M = L.data.rnr || [];
	// Colour and legend name of each kind of mark.
	const STYLE = {
		wait: ["rgba(0,140,160,0.18)", "#008ca0", "RNR wait"],
		short: ["rgba(220,0,0,0.18)", "#d00000", "RNR wait shorter than the timer"],
		silent: ["rgba(120,0,200,0.16)", "#7800c8", "silent timeout (stall)"],
	};

	function attach(g) {
		if (!g || g.rnr) return;
		const mine = M.filter((m) => m.conn === g.c.id);
		g.rnr = { marks: mine, drawn: 0 };
		if (!mine.length) return;
		for (const k of Object.keys(STYLE)) {
			const n = mine.filter((m) => m.kind === k).length;
			if (!n) continue;
			const s = document.createElement("span");
			s.className = "rnr";
			const dot = document.createElement("i");
			dot.style.background = STYLE[k][1];
			dot.style.borderRadius = "0";
			s.appendChild(dot);
			s.appendChild(document.createTextNode(STYLE[k][2] + " (" + n + ")"));
			g.legend.appendChild(s);
		}
		const hooks = g.u.hooks;
		hooks.draw = (hooks.draw || []).concat([(u) => draw(g, u)]);
		g.u.redraw(false);
	}

	// draw shades each mark in view and labels it at the top.
	function draw(g, u) {
		const ctx = u.ctx, { left, top, width, height } = u.bbox;
		g.rnr.drawn = 0;
		ctx.save();
		ctx.font = 11 * devicePixelRatio + "px system-ui, sans-serif";
		ctx.textBaseline = "bottom";
		ctx.textAlign = "left";
		for (const m of g.rnr.marks) {
			let x0 = u.valToPos(m.s, "x", true), x1 = u.valToPos(m.e, "x", true);
			if (x1 < left || x0 > left + width) continue;
			x0 = Math.max(x0, left);
			x1 = Math.min(x1, left + width);
			const [fill, line] = STYLE[m.kind] || STYLE.wait;
			ctx.fillStyle = fill;
			ctx.fillRect(x0, top, Math.max(2, x1 - x0), height);
			ctx.strokeStyle = line;
			ctx.lineWidth = devicePixelRatio;
			ctx.beginPath();
			ctx.moveTo(x1, top);
			ctx.lineTo(x1, top + height);
			ctx.stroke();
			ctx.fillStyle = line;
			ctx.fillText(m.label, x0 + 3, top + height - 2 - (g.rnr.drawn % 3) * 13 * devicePixelRatio);
			g.rnr.drawn++;
		}
		ctx.restore();
	}

	// The graphs page.js makes once ready, and those it adds on demand.
	const timer = setInterval(() => {
		if (!L.ready && !L.error) return;
		clearInterval(timer);
		if (L.error) return;
		L.graphs.forEach(attach);
		const show = L.show;
		L.show = async (id) => {
			const k = await show(id);
			attach(L.graphs[k]);
			return k;
		};
	}, 20);
})();
