/**
 * Five stars, filled up to the rounded rating, plus the review count.
 * @param {{value: number, count: number}} props
 */
export function Rating({ value, count }) {
  const filled = Math.round(value);
  const stars = [];
  for (let i = 1; i <= 5; i++) {
    stars.push(
      <span key={i} className={i <= filled ? 'star star-on' : 'star'} aria-hidden="true">
        {i <= filled ? '\u2605' : '\u2606'}
      </span>,
    );
  }
  return (
    <div className="rating" title={`${value.toFixed(1)} out of 5`}>
      <span className="stars">{stars}</span>
      <span className="rating-value">{value.toFixed(1)}</span>
      <span className="rating-count">({count} reviews)</span>
    </div>
  );
}
