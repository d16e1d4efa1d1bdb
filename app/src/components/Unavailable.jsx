import { Component } from 'react';

/**
 * An error boundary around one section: when the section fails (its deferred value failed or
 * came too late), the section says so and the rest of the page stays.
 * @extends {Component<{what: string, children?: import('react').ReactNode}, {failed: boolean}>}
 */
export class Unavailable extends Component {
  /** @param {{what: string, children?: import('react').ReactNode}} props */
  constructor(props) {
    super(props);
    this.state = { failed: false };
  }

  static getDerivedStateFromError() {
    return { failed: true };
  }

  render() {
    if (this.state.failed) {
      return <p className="unavailable" data-testid="unavailable">{`${this.props.what} are unavailable right now.`}</p>;
    }
    return this.props.children;
  }
}
